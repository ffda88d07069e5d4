import { testDataPath } from './data-path.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import { startSlipway, type Running } from '../../src/start.js';
import { formatViolations, ResponseValidator, watchServer } from './response-validator.js';

export interface TestServer extends Running {
  dataDir: string;
  /** Every response this server sent, checked against api/openapi.yaml. */
  validator: ResponseValidator;
  /**
   * Stops the server and removes its data dir; then throws when a response broke the spec, so a
   * test whose server sent an undocumented answer fails.
   */
  stop(): Promise<void>;
}

export interface TestServerOptions {
  /** Leave responses unchecked: only for a test that sends undocumented answers on purpose. */
  validateResponses?: boolean;
}

/** One compiled spec for every test server of a test file. */
let sharedValidatorSpec: ResponseValidator | undefined;
const newValidator = (): ResponseValidator => {
  sharedValidatorSpec ??= new ResponseValidator();
  return sharedValidatorSpec.fresh();
};

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };
export type RawConfig = DeepPartial<ReturnType<typeof parseConfig>> & Record<string, unknown>;

/** Starts the real server on a free loopback port with a real SQLite file in a fresh data dir. */
export async function startTestServer(
  raw: RawConfig = {},
  dataDir?: string,
  options: TestServerOptions = {},
): Promise<TestServer> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'slipway-test-'));
  const server = (raw.server ?? {}) as Record<string, unknown>;
  const config = parseConfig({
    ...raw,
    // In-process servers stop with their apps: a test leaves no sandbox behind.
    server: {
      listen: '127.0.0.1:0',
      restartContinuity: false,
      dataPath: testDataPath(),
      ...server,
      dataDir: dir,
    },
  });
  const running = await startSlipway(config, { logger: false });
  const validator = newValidator();
  const unwatch =
    options.validateResponses === false ? () => {} : watchServer(running.app.server, validator);
  return {
    ...running,
    dataDir: dir,
    validator,
    async stop() {
      await running.close();
      unwatch();
      if (!dataDir) rmSync(dir, { recursive: true, force: true });
      if (validator.violations.length > 0) {
        throw new Error(
          `responses that break api/openapi.yaml (${validator.violations.length}):\n` +
            formatViolations(validator.violations),
        );
      }
    },
  };
}

/** Fetches a path of the server with an optional bearer token; returns status, headers and body. */
export async function call(
  base: string,
  path: string,
  init: RequestInit & { token?: string; json?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: unknown; text: string }> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set('authorization', `Bearer ${init.token}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  const res = await fetch(base + path, { ...init, headers, body, redirect: 'manual' });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (HTML, SSE, YAML): the caller reads `text`.
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}
