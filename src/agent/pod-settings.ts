import { isIP } from 'node:net';
import type { Template } from './protocol.js';

/** What a pod's agent is told by its pod spec: env set by the SandboxTemplate (pod-spec.ts). */
export interface PodSettings {
  template: Template;
  /** The template's enroll key (from a Secret): authorises the one `POST /enroll`. */
  enrollKey: string;
  /** The address the agent listens on (the downward API's status.podIP). */
  podIP: string;
  /** Control API: enroll, inject, health, logs, events. */
  agentPort: number;
  /** Where Services and routes send visitors; the agent bridges to the app. */
  publicPort: number;
  /** The app's $PORT, behind the agent. */
  appPort: number;
  /** The control plane's egress gate, `address:port`: the agent relays the app's proxy there. */
  egressGate: { host: string; port: number };
  /** The app's HTTP(S)_PROXY port on 127.0.0.1 (the agent's relay). */
  proxyPort: number;
  python?: string;
}

/** The names of the env variables, shared with the runtime that writes the pod spec. */
export const POD_ENV = {
  template: 'SLIPWAY_TEMPLATE',
  enrollKey: 'SLIPWAY_ENROLL_KEY',
  podIP: 'POD_IP',
  agentPort: 'SLIPWAY_AGENT_PORT',
  publicPort: 'SLIPWAY_PUBLIC_PORT',
  appPort: 'SLIPWAY_APP_PORT',
  egressGate: 'SLIPWAY_EGRESS_GATE',
  proxyPort: 'SLIPWAY_PROXY_PORT',
  python: 'SLIPWAY_PYTHON',
} as const;

export const POD_PORTS = { agent: 9090, public: 8080, app: 8081, proxy: 3128 } as const;

/**
 * Reads the settings and removes them from this process's env, so an app loaded in this process
 * does not find the enroll key in process.env (the agent accepts one enroll only, and the
 * NetworkPolicy keeps other pods off the control port, so the key is of no use to it anyway).
 */
export function readPodSettings(env: NodeJS.ProcessEnv): PodSettings {
  const template = env[POD_ENV.template];
  if (template !== 'static' && template !== 'node' && template !== 'python') {
    throw new Error(`${POD_ENV.template} must be static, node or python, not ${String(template)}`);
  }
  const enrollKey = env[POD_ENV.enrollKey] ?? '';
  if (enrollKey.length < 32) throw new Error(`${POD_ENV.enrollKey} is missing or too short`);
  const podIP = env[POD_ENV.podIP] ?? '0.0.0.0';
  if (isIP(podIP) === 0) throw new Error(`${POD_ENV.podIP} is not an IP address: ${podIP}`);
  const settings: PodSettings = {
    template,
    enrollKey,
    podIP,
    agentPort: port(env, POD_ENV.agentPort, POD_PORTS.agent),
    publicPort: port(env, POD_ENV.publicPort, POD_PORTS.public),
    appPort: port(env, POD_ENV.appPort, POD_PORTS.app),
    egressGate: hostPort(env[POD_ENV.egressGate] ?? ''),
    proxyPort: port(env, POD_ENV.proxyPort, POD_PORTS.proxy),
    ...(env[POD_ENV.python] ? { python: env[POD_ENV.python] } : {}),
  };
  for (const name of Object.values(POD_ENV)) delete env[name];
  return settings;
}

/** `10.96.0.12:3128`: an address, not a name (the pod may not resolve names). */
function hostPort(text: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (!match?.[1] || isIP(match[1]) === 0 || port < 1 || port > 65_535) {
    throw new Error(`${POD_ENV.egressGate} must be address:port, not ${JSON.stringify(text)}`);
  }
  return { host: match[1], port };
}

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > 65_535) {
    throw new Error(`${name} must be a TCP port, not ${text}`);
  }
  return value;
}
