// How the test node runs a Slipway sandbox pod: the agent bundle the image would run
// (src/agent/pod-main.ts), in a bwrap container of its own (its own /app, /tmp and pid namespace,
// as a container runtime would give it) on the host's network, where the pod's address is its
// own 198.18.X.N. Sharing the host network means pods would fight over the ports they use on
// 127.0.0.1 (the app's $PORT, the egress relay), so each pod gets its own; the ports on the pod's
// address (agent, app) are the real ones.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bundleAgent } from '../../src/runtime/local/agent-bundle.js';
import { cacheDir, type AgentProcess, type Pod } from './cluster.js';

export async function bundlePodAgent(): Promise<string> {
  const dir = join(cacheDir, 'agent');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `pod-agent.${process.pid}.mjs`);
  await bundleAgent(file, 'pod');
  return file;
}

/**
 * Each test process takes a block of 200 ports below the kernel's ephemeral range (32768 up), so
 * an outgoing connection's source port can never be the one an app is about to listen on (the
 * earlier allocation reached into that range). Blocks differ by pid; a process cycles within its
 * own.
 */
const PORT_BLOCK = 200;
const portBase = 10_000 + (process.pid % 100) * PORT_BLOCK;
let portsTaken = 0;
const nextPort = (): number => portBase + (portsTaken++ % PORT_BLOCK);

/** The loopback ports a pod's agent uses (app, egress relay), its own on the shared network. */
export function podPorts(): Record<string, string> {
  return { SLIPWAY_APP_PORT: String(nextPort()), SLIPWAY_PROXY_PORT: String(nextPort()) };
}

export function podAgentCommand(bundle: string): (pod: Pod, ip: string) => AgentProcess {
  return () => ({
    command: 'bwrap',
    args: [
      '--die-with-parent',
      '--unshare-pid',
      '--bind',
      '/',
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/app',
      '--tmpfs',
      '/opt',
      '--ro-bind',
      bundle,
      '/opt/slipway/agent.mjs',
      '--chdir',
      '/',
      process.execPath,
      '/opt/slipway/agent.mjs',
    ],
    env: podPorts(),
  });
}
