/**
 * The Server-Timing header of a deploy, a rollback and a resume, over real HTTP into real
 * sandboxes: every stage of the way is there, in order, and together they fit in the time the
 * client waited for the answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerTiming } from '../../src/stage-clock.js';
import { nodeApp } from '../support/apps.js';
import { fetchApp } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';

const KEY = 'stage-timing-key-0123456789abcdef';

describe('Server-Timing on deploy, rollback and resume', () => {
  let server: TestServer;
  const auth = { authorization: `Bearer ${KEY}`, 'x-requested-with': 'slipway-test' };

  /** Sends the request; the stages of its Server-Timing header and how long the client waited. */
  async function timed(path: string, init: RequestInit) {
    const started = performance.now();
    const res = await fetch(`${server.baseURL}${path}`, init);
    const body = (await res.json()) as { url?: string };
    const waited = performance.now() - started;
    return {
      status: res.status,
      body,
      waited,
      stages: parseServerTiming(res.headers.get('server-timing')),
    };
  }

  async function deployApp(label: string) {
    const form = new FormData();
    form.set('metadata', JSON.stringify({ name: 'timed' }));
    const source = new Blob([new Uint8Array(await nodeApp(label))], { type: 'application/gzip' });
    form.set('source', source, 'source.tar.gz');
    return timed('/v1/deploy', { method: 'POST', body: form, headers: auth });
  }

  /**
   * Stages that took no time still appear; none is negative; all fit in the client's wait. A head
   * start's (`ahead-*`) ran beside the others: together they fit in it too.
   */
  function fits(stages: Record<string, number>, waited: number): void {
    for (const ms of Object.values(stages)) expect(ms).toBeGreaterThanOrEqual(0);
    const ahead = Object.entries(stages).filter(([stage]) => stage.startsWith('ahead-'));
    expect(ahead.reduce((a, [, ms]) => a + ms, 0)).toBeLessThanOrEqual(
      waited + ahead.length * 0.05,
    );
    const sum = Object.entries(stages)
      .filter(([stage]) => !stage.startsWith('ahead-'))
      .reduce((a, [, ms]) => a + ms, 0);
    // Each stage is rounded to 0.1 ms: allow that much per stage.
    expect(sum).toBeLessThanOrEqual(waited + Object.keys(stages).length * 0.05);
  }

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'timer' }] },
      runtime: { poolSize: 1 },
    });
  });
  afterAll(() => server.stop());

  it('breaks a deploy into a warm sandbox down from the upload to the answer', async () => {
    const res = await deployApp('v1');
    expect(res.status).toBe(200);
    // The sandbox was claimed and started beside the rows and the machine's first steps: the
    // machine's claim took it, and its inject waited for the start under way.
    expect(Object.keys(res.stages)).toEqual([
      'parse',
      'inspect',
      'classify',
      'head-start',
      'blob',
      'rows',
      'prune',
      'prepare',
      'claim',
      'handoff',
      'inject',
      'ahead-claim',
      'ahead-unpack',
      'ahead-app-start',
      'ahead-inject',
      'ready',
      'route',
      'audit',
      'reply',
    ]);
    // The app's own start is the agent's measure of loading it until it accepted a connection.
    expect(res.stages['ahead-app-start']).toBeGreaterThan(0);
    fits(res.stages, res.waited);
    expect((await fetchApp(res.body.url ?? '')).body).toMatch(/^v1 /);
  });

  it('breaks a rollback to the sandbox kept warm down without an unpack or a start', async () => {
    expect((await deployApp('v2')).status).toBe(200);
    const res = await timed('/v1/apps/timed/rollback', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1 }),
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.stages)).toEqual([
      'blob',
      'rows',
      'prune',
      'prepare',
      'claim',
      'handoff',
      'ready',
      'route',
      'audit',
      'reply',
    ]);
    fits(res.stages, res.waited);
    expect((await fetchApp(res.body.url ?? '')).body).toMatch(/^v1 /);
  });

  it('breaks a resume down from the claim to the answer', async () => {
    const suspended = await fetch(`${server.baseURL}/v1/apps/timed/suspend`, {
      method: 'POST',
      headers: auth,
    });
    expect(suspended.status).toBe(200);
    const res = await timed('/v1/apps/timed/resume', { method: 'POST', headers: auth });
    expect(res.status).toBe(200);
    expect(Object.keys(res.stages)).toEqual([
      'prepare',
      'claim',
      'handoff',
      'unpack',
      'app-start',
      'inject',
      'ready',
      'route',
      'reply',
    ]);
    fits(res.stages, res.waited);
  });
});
