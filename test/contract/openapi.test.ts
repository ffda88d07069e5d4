import type { FastifyInstance } from 'fastify';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProtectedPath } from '../../src/auth/paths.js';
import { parseConfig } from '../../src/config/load.js';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import type { Store } from '../../src/persistence/store.js';
import { createLogger, serviceLog } from '../../src/logging.js';
import * as api from '../../src/http/api-schemas.js';
import { composeServer, openDeployParts } from '../../src/start.js';
import {
  collectRefs,
  deref,
  isObject,
  isPending,
  loadSpec,
  operations,
  resolvePointer,
  routeKey,
  type Json,
  type Operation,
} from './openapi-doc.js';

const spec = loadSpec();
const ops = operations(spec);
const label = (o: { method: string; path: string }): string => `${o.method} ${o.path}`;
const isOpen = (o: Operation): boolean =>
  Array.isArray(o.op.security) && o.op.security.length === 0;

/**
 * design.md §6, plus invalid_password (its share-view row), in_use (409 of deleting a
 * department that users or apps still name, which the departments issue added), and the share-link
 * issue's password_required (401 before a password is sent), too_many_attempts (429 of password
 * guessing) and share_links_unavailable (503 on the memory store backend), the data-safety
 * issue's last_admin (409 of a change that would leave no active admin), and issue 30's
 * headers_too_large (431) and request_timeout (408), and issue 29's nothing_to_cancel (409 of a
 * cancel with no deploy in flight), and unknown_department (409 of a user naming a department
 * that does not exist, told apart from the 404 of a user that does not exist), and issue 27's
 * leader_unavailable (503 of a follower replica that cannot reach its leader).
 */
const ERROR_CODES = new Set([
  'in_use',
  'last_admin',
  'configured_admin',
  'method_not_allowed',
  'headers_too_large',
  'request_timeout',
  'password_required',
  'too_many_attempts',
  'share_links_unavailable',
  'storage_unavailable',
  'unsupported_media_type',
  'unauthenticated',
  'invalid_password',
  'forbidden',
  'policy_denied',
  'not_found',
  'missing_name',
  'missing_source',
  'bad_multipart',
  'bad_metadata',
  'bad_request',
  'unknown_version',
  'bad_expires_in',
  'payload_too_large',
  'quota_exceeded',
  'too_many_log_streams',
  'too_many_streams',
  'name_taken',
  'deploy_failed',
  'internal',
  'not_ready',
  'nothing_to_cancel',
  'unknown_department',
  'leader_unavailable',
]);

/** spec §5: the paths open even when auth is enabled. */
const OPEN_OPERATIONS = [
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /api/auth',
  'GET /api/share/{token}',
  'POST /api/share/{token}',
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/{resource_path}',
  // CORS preflights carry no credentials (Fetch spec); the MCP plugin exempts them by method.
  'OPTIONS /mcp',
  'OPTIONS /mcp/',
];

describe('api/openapi.yaml is a sound OpenAPI 3.1 document', () => {
  it('declares OpenAPI 3.1 with info, paths and the bearer scheme applied globally', () => {
    expect(String(spec.openapi)).toMatch(/^3\.1\.\d+$/);
    expect(spec.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(ops.length).toBeGreaterThan(30);
    expect(resolvePointer(spec, '#/components/securitySchemes/bearer')).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    });
    expect(spec.security).toEqual([{ bearer: [] }]);
  });

  it('resolves every $ref', () => {
    const refs = collectRefs(spec);
    expect(refs.length).toBeGreaterThan(50);
    const dangling = refs.filter(({ ref }) => resolvePointer(spec, ref) === undefined);
    expect(dangling).toEqual([]);
  });

  it('gives every operation a unique operationId, a summary and responses', () => {
    const ids = new Map<string, string[]>();
    for (const o of ops) {
      expect(o.op.operationId, label(o)).toMatch(/^[A-Za-z][A-Za-z0-9]*$/);
      expect(o.op.summary, label(o)).toEqual(expect.any(String));
      expect(Object.keys(isObject(o.op.responses) ? o.op.responses : {}), label(o)).not.toEqual([]);
      const id = String(o.op.operationId);
      ids.set(id, [...(ids.get(id) ?? []), label(o)]);
    }
    expect([...ids].filter(([, users]) => users.length > 1)).toEqual([]);
  });

  it('declares each path template variable as a required path parameter', () => {
    const problems: string[] = [];
    for (const o of ops) {
      const declared = [
        ...o.pathParameters,
        ...(Array.isArray(o.op.parameters) ? o.op.parameters : []),
      ]
        .map((p) => deref(spec, p))
        .filter(
          (p): p is Record<string, Json> => isObject(p) && p.in === 'path' && p.required === true,
        )
        .map((p) => p.name);
      for (const [, name] of o.path.matchAll(/\{([^}]+)\}/g)) {
        if (!declared.includes(name ?? '')) problems.push(`${label(o)}: {${name}}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('answers every 4xx/5xx of the REST routes with the Error body', () => {
    const problems: string[] = [];
    // MCP errors are JSON-RPC's and a HEAD response has no body: both are exempt.
    const rest = ops.filter((o) => o.method !== 'HEAD' && !o.path.startsWith('/mcp'));
    for (const o of rest) {
      const responses = isObject(o.op.responses) ? o.op.responses : {};
      for (const [status, raw] of Object.entries(responses)) {
        if (!/^[45]/.test(status)) continue;
        const response = deref(spec, raw);
        const content = isObject(response) ? response.content : undefined;
        const json = isObject(content) ? content['application/json'] : undefined;
        const schema = isObject(json) ? json.schema : undefined;
        if (!isObject(schema) || schema.$ref !== '#/components/schemas/Error') {
          problems.push(`${label(o)} ${status}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('uses only the error codes of design.md §6 in its examples', () => {
    const codes = collectExampleCodes(spec);
    expect(codes.size).toBeGreaterThan(10);
    expect([...codes].filter((code) => !ERROR_CODES.has(code))).toEqual([]);
  });

  it('names in its Errors paragraph every error code the server throws', () => {
    const errors = /\*\*Errors\.\*\*([\s\S]*?)\n\n/.exec(
      String(resolvePointer(spec, '#/info/description')),
    )?.[1];
    expect(errors).toBeDefined();
    const thrown = thrownErrorCodes();
    expect(thrown.size).toBeGreaterThan(15);
    expect([...thrown].filter((code) => !errors?.includes(`\`${code}\``))).toEqual([]);
    expect([...thrown].filter((code) => !ERROR_CODES.has(code))).toEqual([]);
  });

  it('opens exactly the routes spec §5 exempts from bearer auth', () => {
    const open = ops.filter(isOpen);
    expect(open.map(label).sort()).toEqual([...OPEN_OPERATIONS].sort());
  });

  it('agrees with the auth plugin on which paths are open', () => {
    // Path rules only: the MCP preflights are exempted by their method, not their path.
    const disagree = ops
      .filter((o) => o.method !== 'OPTIONS')
      .map((o) => ({ o, url: o.path.replace(/\{[^}]+\}/g, 'x') }))
      .filter(({ o, url }) => isProtectedPath(url) !== !isOpen(o))
      .map(({ o }) => label(o));
    expect(disagree).toEqual([]);
  });

  it('marks pending operations with the boolean true only', () => {
    // Once every operation is served there are no marks left; a stray false or string still fails.
    const marks = ops.map((o) => o.op['x-slipway-pending']).filter((m) => m !== undefined);
    expect(marks.filter((m) => m !== true)).toEqual([]);
  });
});

/** The URL spaces the spec must cover; the dashboard and app proxying live outside them. */
const inContractScope = (url: string): boolean =>
  /^\/(v1|api|mcp|internal|\.well-known)(\/|$)/.test(url) ||
  ['/healthz', '/readyz', '/metrics'].includes(url);

/** @fastify/swagger-ui's own plumbing under /api/docs/; the documented docs routes are not here. */
const SWAGGER_UI_INTERNALS = new Set([
  '/api/docs/static/*',
  '/api/docs/static/index.html',
  '/api/docs/static/swagger-initializer.js',
  '/api/docs/json',
  '/api/docs/yaml',
]);

describe('the server serves exactly the operations the spec does not mark pending', () => {
  let app: FastifyInstance;
  let store: Store;
  let dataDir: string;
  let served: Set<string>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-contract-'));
    const config = parseConfig({
      server: { dataDir },
      auth: { enabled: false },
      store: { backend: 'memory' },
    });
    store = createMemoryStore();
    const logger = createLogger(false);
    const parts = await openDeployParts(config, serviceLog(logger));
    app = await composeServer({ config, store, parts, logger });
    await app.ready();
    served = new Set(app.routeTable.list().map((r) => routeKey(r.method, r.url)));
  });

  afterAll(async () => {
    await app?.close();
    store?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('documents every route it registers', () => {
    const documented = new Set(ops.map((o) => routeKey(o.method, o.path)));
    const routes = app.routeTable.list().filter((r) => inContractScope(r.url));
    expect(routes.length).toBeGreaterThan(5);
    const undocumented = routes
      .filter((r) => !SWAGGER_UI_INTERNALS.has(r.url))
      // fastify adds HEAD to every GET; only HEAD routes the spec names are part of the contract.
      .filter((r) => r.method !== 'HEAD' || !served.has(routeKey('GET', r.url)))
      .map((r) => routeKey(r.method, r.url))
      .filter((key) => !documented.has(key));
    expect(undocumented).toEqual([]);
  });

  it('validates, types and serializes each REST operation with its schema generated from the spec', () => {
    const generated = new Map<string, Record<string, unknown>>(Object.entries(api));
    const routes = new Map(app.routeTable.list().map((r) => [routeKey(r.method, r.url), r]));
    const covered = ops.filter((o) => generated.has(String(o.op.operationId)));
    expect(covered.length).toBeGreaterThan(25);
    const elsewhere: string[] = [];
    for (const o of covered) {
      const route = routes.get(routeKey(o.method, o.path));
      const want = generated.get(String(o.op.operationId)) ?? {};
      const have = (route?.schema ?? {}) as Record<string, unknown>;
      for (const part of Object.keys(want)) {
        // fastify names a wildcard's parameter `*`: the spec's name cannot be validated there.
        if (part === 'params' && route?.url.endsWith('*')) continue;
        if (have[part] !== want[part]) elsewhere.push(`${label(o)} ${part}`);
      }
    }
    expect(elsewhere).toEqual([]);
  });

  it('serves every operation not marked x-slipway-pending', () => {
    const missing = ops
      .filter((o) => !isPending(o))
      .filter((o) => !served.has(routeKey(o.method, o.path)))
      .map(label);
    expect(missing).toEqual([]);
  });

  it('serves no operation still marked x-slipway-pending (remove the mark when it lands)', () => {
    const pending = ops.filter(isPending);
    expect(pending.filter((o) => served.has(routeKey(o.method, o.path))).map(label)).toEqual([]);
  });
});

/** The code of every `new AppError(<status>, '<code>', ...)` in src/. */
function thrownErrorCodes(): Set<string> {
  const root = new URL('../../src/', import.meta.url).pathname;
  const codes = new Set<string>();
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts')) continue;
    const text = readFileSync(join(root, file), 'utf8');
    for (const [, code] of text.matchAll(/new AppError\(\s*\d{3},\s*'([a-z_]+)'/g)) {
      codes.add(code ?? '');
    }
  }
  return codes;
}

/** `code` values of every Error example (responses' `example` and `examples`). */
function collectExampleCodes(node: Json): Set<string> {
  const codes = new Set<string>();
  const visit = (value: Json, key: string): void => {
    if (Array.isArray(value)) return value.forEach((child) => visit(child, key));
    if (!isObject(value)) return;
    if (key === 'example' && typeof value.code === 'string') codes.add(value.code);
    for (const [childKey, child] of Object.entries(value)) visit(child, childKey);
  };
  visit(node, '');
  return codes;
}
