import { testDataPath } from '../support/data-path.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { startSlipway, type Running } from '../../src/start.js';

/** Auth settings a test passes; everything else is a loopback listener on a free port. */
export type AuthOverrides = Record<string, unknown>;

export interface Started extends Running {
  dataDir: string;
  config: Config;
}

/** A fresh temp data dir (real SQLite file inside); removed by `cleanup`. */
export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'slipway-auth-'));
}

export function authConfig(
  dataDir: string,
  auth: AuthOverrides,
  server: Record<string, unknown> = {},
): Config {
  return parseConfig({
    // In-process servers stop with their apps and front door: a test leaves nothing running.
    server: {
      listen: '127.0.0.1:0',
      restartContinuity: false,
      dataPath: testDataPath(),
      dataDir,
      ...server,
    },
    store: { backend: 'sqlite' },
    auth,
  });
}

export async function start(
  auth: AuthOverrides,
  dataDir = tempDataDir(),
  server: Record<string, unknown> = {},
): Promise<Started> {
  const config = authConfig(dataDir, auth, server);
  const running = await startSlipway(config, { logger: false });
  return { ...running, dataDir, config };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** fetch with an optional bearer token; returns status, headers and the parsed JSON body (if any). */
export async function call(
  base: string,
  path: string,
  init: { token?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  if (text && (response.headers.get('content-type') ?? '').includes('json'))
    body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body };
}

/** Asserts nothing; narrows an unknown JSON body for property access in expectations. */
export const json = (body: unknown): Record<string, unknown> => body as Record<string, unknown>;

/**
 * A request whose target is sent byte for byte (fetch would resolve `..` and `%2e` first), so path
 * normalisation tricks reach the server as an attacker would send them.
 */
export async function rawGet(
  base: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const { request } = await import('node:http');
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method: 'GET', path: target, headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
