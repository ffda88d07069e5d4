import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSpec, resolvePointer } from '../contract/openapi-doc.js';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

/**
 * The API contract's leftovers (issue 30): answers at the edges, where the server and
 * api/openapi.yaml disagreed. Real server, real port; every response is checked against the spec.
 */
const ADMIN = 'admin-key-for-contract-edge-tests';
const MAX_SOURCE = 64 * 1024;

/**
 * Sends raw bytes and reads the whole answer until the server closes the connection; `keepOpen`
 * leaves the client's side open, as a client still sending would.
 */
function rawExchange(port: number, text: string, keepOpen = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      if (keepOpen) socket.write(text);
      else socket.end(text);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

let compiled: ValidateFunction | undefined;
/** DeployMetadata of api/openapi.yaml, compiled (once) as JSON Schema 2020-12 (OpenAPI 3.1). */
function deployMetadataSchema(): ValidateFunction {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ strict: false });
  ajv.addSchema(loadSpec(), 'openapi.json');
  compiled = ajv.compile({ $ref: 'openapi.json#/components/schemas/DeployMetadata' });
  return compiled;
}

const bodyOf = (answer: string): unknown =>
  JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('the contract at its edges', () => {
  let server: TestServer;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: ADMIN, name: 'root', role: 'admin' }] },
      runtime: { poolSize: 0 },
      limits: { maxSourceBytes: MAX_SOURCE },
    });
    port = Number(new URL(server.baseURL).port);
  });
  afterAll(() => server.stop());

  it('answers a request head over 16 KB with 431 in the error envelope', async () => {
    const answer = await rawExchange(
      port,
      `GET /v1/apps HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer.toLowerCase()).toContain('content-type: application/json');
    expect(bodyOf(answer)).toEqual({
      code: 'headers_too_large',
      message: 'the request line and headers are larger than 16 KB',
      details: { limitBytes: 16 * 1024 },
    });
  });

  it('answers a request that is not HTTP with 400 in the error envelope', async () => {
    const answer = await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(answer)).toMatchObject({ code: 'bad_request' });
  });

  it('lists only the methods of /v1/apps/{id} in Allow, whatever the length of the id', async () => {
    for (const id of ['short', 'a'.repeat(3_000)]) {
      const res = await call(server.baseURL, `/v1/apps/${id}`, { method: 'PUT', token: ADMIN });
      expect(res.status, `${id.length} characters`).toBe(405);
      expect(res.headers.get('allow'), `${id.length} characters`).toBe('GET, PATCH, DELETE');
    }
  });

  it('counts the path parameter limit after percent-decoding, as the spec says', async () => {
    const description = resolvePointer(loadSpec(), '#/components/responses/UriTooLong/description');
    expect(description).toMatch(/2,048 characters once percent-decoded/);
    // 2,048 characters sent as 6,144: past the router, refused by the schema (255 at most).
    const atLimit = await call(server.baseURL, `/api/users/${'%41'.repeat(2_048)}`, {
      token: ADMIN,
    });
    expect(atLimit.status).toBe(400);
    expect(atLimit.body).toMatchObject({
      code: 'bad_request',
      details: { issues: [{ path: '/id' }] },
    });
    const overLimit = await call(server.baseURL, `/api/users/${'%41'.repeat(2_049)}`, {
      token: ADMIN,
    });
    expect(overLimit.status).toBe(414);
  });

  it.each(['text/plain', 'application/xml', 'application/x-www-form-urlencoded'])(
    'refuses a %s body on a JSON route with 415',
    async (type) => {
      const res = await call(server.baseURL, '/api/users', {
        method: 'POST',
        token: ADMIN,
        headers: { 'content-type': type },
        body: '{"name":"plain"}',
      });
      expect(res.status).toBe(415);
      expect(res.body).toEqual({
        code: 'unsupported_media_type',
        message: 'unsupported content type',
      });
    },
  );

  it.each([
    ['PATCH', '/v1/apps/nope'],
    ['POST', '/v1/apps/nope/suspend'],
  ])(
    'refuses a multipart body on %s %s, a JSON route beside the deploy, with 415',
    async (method, path) => {
      const form = new FormData();
      form.set('metadata', '{"access":"private"}');
      const res = await fetch(`${server.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}` },
        body: form,
      });
      expect(res.status).toBe(415);
      expect(await res.json()).toEqual({
        code: 'unsupported_media_type',
        message: 'unsupported content type',
      });
    },
  );

  it('says which limit a body over it passed (413 details.limitBytes)', async () => {
    const json = await call(server.baseURL, '/api/users', {
      method: 'POST',
      token: ADMIN,
      json: { name: 'x'.repeat(server.app.config.server.bodyLimitBytes) },
    });
    expect(json.status).toBe(413);
    expect(json.body).toMatchObject({
      code: 'payload_too_large',
      details: { limitBytes: server.app.config.server.bodyLimitBytes },
    });
    const source = await deploy(
      server.baseURL,
      ADMIN,
      { name: 'too-big' },
      Buffer.alloc(MAX_SOURCE + 1024),
    );
    expect(source.status).toBe(413);
    expect(source.body).toEqual({
      code: 'payload_too_large',
      message: 'source tarball is larger than the limit of 65536 bytes',
      details: { limitBytes: MAX_SOURCE },
    });
  });

  it.each([
    ['a top-level field', { name: 'extra', color: 'blue' }, 'color'],
    ['a runtime field', { name: 'extra', runtime: { lane: 'fast', cpu: 2 } }, 'runtime.cpu'],
    ['an egress field', { name: 'extra', egress: { allowed_hosts: [], ports: [] } }, 'egress'],
    ['an env item field', { name: 'extra', env: [{ name: 'A', value: 'b', x: 1 }] }, 'env[0]'],
    ['an unknown template', { name: 'extra', runtime: { template: 'ruby' } }, 'runtime.template'],
  ])(
    'refuses metadata with %s, as DeployMetadata in the spec does',
    async (_what, metadata, field) => {
      expect(deployMetadataSchema()(metadata)).toBe(false);
      const res = await deploy(server.baseURL, ADMIN, metadata, await tarGz({ 'a.html': 'a' }));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'bad_metadata', details: { field } });
    },
  );

  it('refuses a deploy with two source parts, deploying neither', async () => {
    const form = new FormData();
    form.set('metadata', JSON.stringify({ name: 'twice' }));
    const gzip = { type: 'application/gzip' };
    form.append('source', new Blob([new Uint8Array(await tarGz({ 'a.html': 'a' }))], gzip), 'a');
    form.append('source', new Blob([new Uint8Array(await tarGz({ 'b.html': 'b' }))], gzip), 'b');
    const res = await call(server.baseURL, '/v1/deploy', {
      method: 'POST',
      token: ADMIN,
      body: form,
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 'bad_multipart',
      message: 'the source part is sent twice: send exactly one source and one metadata part',
    });
    expect((await call(server.baseURL, '/v1/apps/twice', { token: ADMIN })).status).toBe(404);
  });
});

describe('a request head that does not arrive in time', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ server: { headersTimeout: '1s' }, runtime: { poolSize: 0 } });
  });
  afterAll(() => server.stop());

  it('is answered 408 in the error envelope, then the connection closes', async () => {
    // The head never ends: the server's timeout, not the client, ends the exchange.
    const answer = await rawExchange(
      Number(new URL(server.baseURL).port),
      'GET /healthz HTTP/1.1\r\nHost: localhost\r\n',
      true,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(answer)).toEqual({
      code: 'request_timeout',
      message: 'the request head did not arrive in time',
    });
  });
});

describe('a server without auth, asked with a foreign Host', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { enabled: false }, runtime: { poolSize: 0 } });
  });
  afterAll(() => server.stop());

  const send = (method: string, host: string) =>
    new Promise<{ status: number; allow: string | undefined }>((resolve, reject) => {
      const { port } = new URL(server.baseURL);
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/v1/apps', method, headers: { host }, agent: false },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, allow: res.headers.allow?.toString() }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('answers a wrong method 405 first, as the spec says, and a right one 403', async () => {
    expect(await send('PUT', 'attacker.example')).toEqual({ status: 405, allow: 'GET' });
    expect(await send('GET', 'attacker.example')).toMatchObject({ status: 403 });
  });
});
