/**
 * A drain never cuts the answer to a change it let commit, however long a busy host takes to
 * write it, and lets no change commit once it is about to cut (commit-gate.ts, drain.ts). The
 * listener is wired as server.ts wires it; its handlers commit and answer when the test says.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitGate } from '../../src/commit-gate.js';
import { AppError } from '../../src/errors.js';
import { Drain, SHUTTING_DOWN } from '../../src/http/drain.js';

/** The drain's timeout, and the notice before it at which the cut hooks run (a quarter). */
const TIMEOUT_MS = 400;
const NOTICE_MS = TIMEOUT_MS / 4;

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** Set up per test: what each request waits for before it goes on. */
interface Script {
  /** `/slow`: commits at once, answers once this resolves. */
  answerSlow: Promise<void>;
  /** `/late`: commits once this resolves. */
  commitLate: Promise<void>;
}

function listen(drain: Drain, gate: CommitGate, script: Script, written: string[]) {
  const arrived = new Map<string, () => void>();
  const arrival = (path: string) => new Promise<void>((resolve) => arrived.set(path, resolve));
  server = createServer((req, res) => {
    if (!drain.admit(res)) return;
    gate.serving(res, () => {
      const path = req.url ?? '';
      arrived.get(path)?.();
      void (async () => {
        try {
          if (path === '/late') await script.commitLate;
          gate.commit(() => written.push(path));
          if (path === '/slow') await script.answerSlow;
          res.end(`committed ${path}`);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          res.writeHead(err.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(err.toBody()));
        }
      })();
    });
  });
  drain.watch(server);
  drain.beforeCut(() => {
    gate.close();
    return gate.answered();
  });
  return {
    arrival,
    port: new Promise<number>((resolve) =>
      server?.listen(0, '127.0.0.1', () => resolve((server?.address() as AddressInfo).port)),
    ),
  };
}

function post(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST' },
      (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A promise and its resolve. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

describe('a drain with changes in flight', () => {
  it('waits for the answer to a change that committed, and refuses one that had not', async () => {
    const drain = new Drain();
    const gate = new CommitGate();
    const written: string[] = [];
    const slow = signal();
    const cutting = signal();
    const { arrival, port } = listen(
      drain,
      gate,
      { answerSlow: slow.promise, commitLate: cutting.promise },
      written,
    );
    drain.beforeCut(cutting.fire);
    const at = await port;
    const [slowIn, lateIn] = [arrival('/slow'), arrival('/late')];
    const answers = [post(at, '/slow'), post(at, '/late')] as const;
    await Promise.all([slowIn, lateIn]);

    const drained = drain.run(TIMEOUT_MS);
    await cutting.promise;
    // The slow answer comes well after the notice ran out: a busy host writing it late. Both
    // timers are this process's, so the drain's notice has always ended first.
    setTimeout(slow.fire, NOTICE_MS * 3);
    const [committed, late] = await Promise.all(answers);

    expect(committed).toEqual({ status: 200, body: 'committed /slow' });
    expect(late.status).toBe(503);
    expect(JSON.parse(late.body)).toEqual(SHUTTING_DOWN);
    expect(written).toEqual(['/slow']);
    expect((await drained).forced).toBe(0);
  });

  it('cuts an owed answer at a second signal', async () => {
    const drain = new Drain();
    const gate = new CommitGate();
    const written: string[] = [];
    const cutting = signal();
    const never = new Promise<void>(() => undefined);
    const { arrival, port } = listen(
      drain,
      gate,
      { answerSlow: never, commitLate: never },
      written,
    );
    drain.beforeCut(cutting.fire);
    const at = await port;
    const slowIn = arrival('/slow');
    const answer = post(at, '/slow');
    await slowIn;

    const drained = drain.run(TIMEOUT_MS);
    await cutting.promise;
    drain.cut();

    expect((await drained).forced).toBe(1);
    await expect(answer).rejects.toThrow(/socket hang up/);
    expect(written).toEqual(['/slow']);
  });

  it('owes nothing to a client that left before the change committed', async () => {
    const drain = new Drain();
    const gate = new CommitGate();
    const written: string[] = [];
    const left = signal();
    const cutting = signal();
    const slow = signal();
    const { arrival, port } = listen(
      drain,
      gate,
      { answerSlow: slow.promise, commitLate: left.promise },
      written,
    );
    drain.beforeCut(cutting.fire);
    const at = await port;
    const lateIn = arrival('/late');
    const gone = request({ host: '127.0.0.1', port: at, path: '/late', method: 'POST' });
    gone.on('error', () => undefined);
    gone.end();
    await lateIn;
    // The server sees the client go before the change commits.
    const closed = new Promise<void>((resolve) => gone.once('close', () => resolve()));
    gone.destroy();
    await closed;
    await waitUntil(() => drain.pending === 0);
    left.fire();
    await waitUntil(() => written.length === 1);

    const slowIn = arrival('/slow');
    const answer = post(at, '/slow');
    await slowIn;
    const drained = drain.run(TIMEOUT_MS);
    await cutting.promise;
    slow.fire();

    expect(await answer).toEqual({ status: 200, body: 'committed /slow' });
    expect((await drained).forced).toBe(0);
    expect(written).toEqual(['/late', '/slow']);
  });
});

/** Polls `ok` on the event loop's turns: what it watches changes on socket events. */
async function waitUntil(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((resolve) => setImmediate(resolve));
}
