/**
 * Issue #15 item 4: a 413 was sometimes lost. The server answered while the client was still
 * sending, then closed the connection with unread bytes, which resets it; the reset can discard the
 * 413 before the client reads it (ECONNRESET, EPIPE in fetch). Every oversized upload must get its
 * 413 body, every time.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'alice-oversize-key-0123456789';
const ROUNDS = 20;

describe('oversized uploads always get their 413', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: KEY, name: 'alice' }] } });
  });
  afterAll(() => server.stop());

  it(`answers a 51 MB multipart deploy with 413 payload_too_large, ${ROUNDS} times in a row`, async () => {
    const source = Buffer.alloc(51 * 1024 * 1024, 1);
    const seen: string[] = [];
    for (let i = 0; i < ROUNDS; i += 1) {
      try {
        const res = await deploy(server.baseURL, KEY, { name: `big${i}` }, source);
        seen.push(`${res.status} ${String(res.body.code)}`);
      } catch (err) {
        seen.push(`error ${String((err as Error).cause ?? err)}`);
      }
    }
    expect(seen).toEqual(Array(ROUNDS).fill('413 payload_too_large'));
  }, 180_000);

  it(`answers a JSON body over the body limit with 413, ${ROUNDS} times in a row`, async () => {
    const json = { password: 'x'.repeat(4 * 1024 * 1024) };
    const seen: string[] = [];
    for (let i = 0; i < ROUNDS; i += 1) {
      try {
        const res = await call(server.baseURL, '/v1/apps/none/share-links', {
          method: 'POST',
          token: KEY,
          json,
        });
        seen.push(`${res.status} ${String((res.body as { code?: string } | undefined)?.code)}`);
      } catch (err) {
        seen.push(`error ${String((err as Error).cause ?? err)}`);
      }
    }
    expect(seen).toEqual(Array(ROUNDS).fill('413 payload_too_large'));
  }, 120_000);

  it('reads the rest of the body and closes gracefully instead of resetting', async () => {
    const url = new URL(server.baseURL);
    const size = 60 * 1024 * 1024;
    // Half-open allowed: the server's FIN must not stop our writes; only a reset can.
    const socket = connect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true });
    let received = '';
    let failure: string | undefined;
    let sentAll = false;
    let endedAfterSentAll: boolean | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => (failure ??= err.code ?? err.message));
    const ended = new Promise<void>((resolve) => {
      socket.once('end', () => {
        endedAfterSentAll = sentAll;
        resolve();
      });
      socket.once('close', () => resolve());
    });
    const write = (data: string | Buffer): Promise<void> =>
      new Promise((resolve) =>
        socket.write(data, (err) => {
          if (err) failure ??= (err as NodeJS.ErrnoException).code ?? err.message;
          resolve();
        }),
      );
    await write(
      `POST /v1/apps/none/share-links HTTP/1.1\r\nHost: ${url.host}\r\n` +
        `Authorization: Bearer ${KEY}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${size}\r\n\r\n`,
    );
    // The whole declared body, as a client that does not look at early answers sends it.
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let sent = 0; sent < size && failure === undefined; sent += chunk.length) {
      await write(chunk);
    }
    sentAll = failure === undefined;
    await ended;
    socket.destroy();
    expect(failure).toBeUndefined();
    expect(endedAfterSentAll).toBe(true);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received.toLowerCase()).toContain('connection: close');
    expect(received).toContain('"code":"payload_too_large"');
  }, 60_000);

  it('still serves the next request normally', async () => {
    expect((await call(server.baseURL, '/v1/apps', { token: KEY })).status).toBe(200);
  });
});
