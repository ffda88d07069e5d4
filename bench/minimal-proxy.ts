import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHaproxy } from '../src/front/haproxy/haproxy-process.js';
import { freePort, stop, waitForAccept } from './processes.js';

/**
 * The proxy row's floor: the least any HAProxy costs in front of the same app. A config with one
 * frontend, one backend and one thread (no routing, header or retry rule) reaches the socket the
 * native front door routes `host` to; measured in the same run, it shows how much of the row's
 * gap to the bare app is Slipway's config and how much is a proxy hop on this host at all.
 * Undefined on the Node data path (no route map) or without HAProxy.
 */
export async function minimalProxy(
  dataDir: string,
  host: string,
): Promise<{ port: number; close(): Promise<void> } | undefined> {
  const binary = findHaproxy();
  const socket = appSocket(join(dataDir, 'front'), host);
  if (binary === undefined || socket === undefined) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-haproxy-'));
  const port = await freePort();
  const config = [
    'global',
    '  nbthread 1',
    'defaults',
    '  mode http',
    '  timeout connect 5s',
    '  timeout client 75s',
    '  timeout server 75s',
    'frontend visitors',
    `  bind 127.0.0.1:${port}`,
    '  default_backend app',
    'backend app',
    `  server app unix@${socket}`,
    '',
  ].join('\n');
  writeFileSync(join(dir, 'haproxy.cfg'), config);
  const child = spawn(binary, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'inherit' });
  await waitForAccept(port);
  return {
    port,
    close: async () => {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The app socket the route map names for `host` (`<host> slot_<n>` → `slots/<n>.sock`). */
function appSocket(front: string, host: string): string | undefined {
  let map: string;
  try {
    map = readFileSync(join(front, 'routes.map'), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const name = host.replace(/:\d+$/, '');
  const slot = map
    .split('\n')
    .map((line) => line.split(' '))
    .find(([key]) => key === name)?.[1];
  const n = /^slot_(\d+)$/.exec(slot ?? '')?.[1];
  return n === undefined ? undefined : join(front, 'slots', `${n}.sock`);
}
