/**
 * A 413 whose body the control plane read to the end and threw away (oversize.ts) ends the
 * connection: `Connection: close`. HAProxy takes a server's `Connection: close` for its own
 * connection to the control plane and keeps the visitor's open, so on the native path the answer
 * must reach the visitor with `Connection: close` too, and the visitor's connection must end.
 * Runs on both data paths (vitest.config.ts).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDataPath } from '../support/data-path.js';
import { startTestServer, type TestServer } from '../support/server.js';

const BODY_LIMIT = 4 * 1024;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    auth: { enabled: false },
    server: { bodyLimitBytes: BODY_LIMIT },
  });
}, 60_000);

afterAll(() => server.stop());

/** A visitor's own keep-alive connection, on which it sends requests one at a time. */
class Visitor {
  readonly ended: Promise<void>;
  private readonly socket: net.Socket;
  private buffered = '';
  private waiting: (() => void) | undefined;

  constructor() {
    const url = new URL(server.baseURL);
    this.socket = net.connect(Number(url.port), url.hostname);
    this.socket.setEncoding('latin1');
    this.socket.on('error', () => undefined);
    this.socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      this.waiting?.();
    });
    this.ended = new Promise((resolve) => this.socket.once('close', () => resolve()));
    void this.ended.then(() => this.waiting?.());
  }

  /** Sends a request; resolves with the answer's head (lower case) once its body came. */
  async ask(request: string): Promise<string> {
    this.socket.write(request);
    for (;;) {
      const end = this.buffered.indexOf('\r\n\r\n');
      const head = end < 0 ? '' : this.buffered.slice(0, end).toLowerCase();
      const length = Number(/\r\ncontent-length: *(\d+)/.exec(head)?.[1] ?? 0);
      if (end >= 0 && this.buffered.length >= end + 4 + length) {
        this.buffered = this.buffered.slice(end + 4 + length);
        return head;
      }
      if (this.socket.closed) throw new Error(`closed before an answer: ${this.buffered}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';

describe(`a 413 behind the front door (${testDataPath()} path)`, () => {
  it("ends the visitor's connection with Connection: close", async () => {
    const body = JSON.stringify({ password: 'x'.repeat(BODY_LIMIT * 4) });
    const visitor = new Visitor();
    const answer = await visitor.ask(
      'POST /v1/apps/none/share-links HTTP/1.1\r\nHost: localhost\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
        body,
    );
    expect(answer).toMatch(/^http\/1\.1 413 /);
    expect(answer).toMatch(/\r\nconnection: *close/);
    // The front door's own mark never reaches the visitor.
    expect(answer).not.toContain('x-slipway');
    await visitor.ended;
  });

  it('keeps the connection of an answer that does not end it', async () => {
    const visitor = new Visitor();
    const first = await visitor.ask(HEALTH);
    expect(first).toMatch(/^http\/1\.1 200 /);
    expect(first).not.toMatch(/\r\nconnection: *close/);
    // A second request on the same connection is answered: it was kept.
    expect(await visitor.ask(HEALTH)).toMatch(/^http\/1\.1 200 /);
    visitor.close();
  });
});
