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

let nextAppPort = 20_000 + (process.pid % 1000) * 20;

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
    env: {
      SLIPWAY_APP_PORT: String(nextAppPort++),
      SLIPWAY_PROXY_PORT: String(nextAppPort++),
    },
  });
}
