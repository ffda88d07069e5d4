/**
 * The CLI's polling fallback waits as long as the server's `poll_after_seconds` says (issue 29),
 * bounded; counted on the wire in front of the real server during a long build.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLL_MAX_MS, POLL_MIN_MS, PollWait, pollWaitMs } from '../../src/cli/poll-wait.js';
import { slowBuildFiles } from '../support/build-apps.js';
import type { TestServer } from '../support/server.js';
import { folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';

const KEY = 'cli-poll-key-0123456789abcdef';

describe('pollWaitMs: the wait before the next poll', () => {
  it("is the server's suggestion, never under 0.5 s nor over 10 s; 0.5 s without one", () => {
    expect(pollWaitMs({ poll_after_seconds: 5 })).toBe(5_000);
    expect(pollWaitMs({ poll_after_seconds: 2 })).toBe(2_000);
    expect(pollWaitMs({ poll_after_seconds: 0 })).toBe(POLL_MIN_MS);
    expect(pollWaitMs({ poll_after_seconds: 0.1 })).toBe(500);
    expect(pollWaitMs({ poll_after_seconds: 3600 })).toBe(POLL_MAX_MS);
    expect(POLL_MAX_MS).toBe(10_000);
    expect(pollWaitMs({})).toBe(500);
    expect(pollWaitMs({ poll_after_seconds: Number.NaN })).toBe(500);
  });

  it('is cut short when woken, and a wake between two waits skips the next one', async () => {
    const wait = new PollWait();
    const started = Date.now();
    const long = wait.sleep(60_000);
    wait.now();
    await long;
    wait.now(); // a poll is on the wire: the next wait is none
    await wait.sleep(60_000);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

interface Poll {
  at: number;
  step?: string;
}

/**
 * Forwards every request to the server, recording each GET of the app's view with the step its
 * answer named; streams (the upload, /api/events, logs) pass through as they come.
 */
function countingProxy(target: string, appPath: string) {
  const polls: Poll[] = [];
  const upstream = new URL(target);
  const proxy = http.createServer((req, res) => {
    const forwarded = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (req.method !== 'GET' || req.url !== appPath) return void answer.pipe(res);
        const poll: Poll = { at: Date.now() };
        polls.push(poll);
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => (text += chunk));
        answer.on('end', () => {
          poll.step = (JSON.parse(text) as { activity?: { step: string } }).activity?.step;
          res.end(text);
        });
      },
    );
    forwarded.on('error', (err) => res.destroy(err));
    req.pipe(forwarded);
  });
  return {
    polls,
    async listen(): Promise<string> {
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    },
    close: () => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(resolve));
    },
  };
}

describe('slipway deploy polls as often as the server says', () => {
  let server: TestServer;
  let env: Record<string, string>;
  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
  }, 120_000);
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it('asks at most every ~5 s while the build runs, then learns the outcome', async () => {
    const proxy = countingProxy(server.baseURL, '/v1/apps/long-build');
    const url = await proxy.listen();
    try {
      // A build of about 25 s: the server answers 202 after its 10 s wait, and the CLI polls.
      const slow = slowBuildFiles('built at last', { lines: 50, everyMs: 500 });
      const run = await runCli(['deploy', folderWith('long-build', slow)], {
        env: { ...env, SLIPWAY_URL: url },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('deployed long-build version 1');
      const building = proxy.polls.filter((p) => p.step === 'installing' || p.step === 'building');
      // Enough polls during the build for the spacing to mean something.
      expect(building.length, JSON.stringify(proxy.polls)).toBeGreaterThanOrEqual(2);
      // Each answer said 5 s: the next poll came no sooner (a timer may fire a little early).
      for (let i = 1; i < building.length; i += 1) {
        const gap = (building[i]?.at ?? 0) - (building[i - 1]?.at ?? 0);
        expect(gap, JSON.stringify(proxy.polls)).toBeGreaterThanOrEqual(4_500);
      }
      expect(proxy.polls.at(-1)?.step).toBeUndefined();
    } finally {
      await proxy.close();
    }
  }, 180_000);
});
