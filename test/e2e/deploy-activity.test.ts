import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILD_LINE, quickFiles, slowBuildFiles } from '../support/build-apps.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { SseClient, type SseFrame } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef';
const SLOW = 120_000;

interface Activity {
  step: string;
  since: string;
  last_line?: string;
}
interface AppEventData {
  app_id: string;
  phase: string;
  activity?: Activity;
  poll_after_seconds?: number;
}

const eventsOf = (sse: SseClient, appId: string): AppEventData[] =>
  sse.frames
    .filter((f) => f.event === 'app' && f.data !== undefined)
    .map((f) => JSON.parse(f.data ?? '{}') as AppEventData)
    .filter((e) => e.app_id === appId);

const isEventOf =
  (appId: string, match: (e: AppEventData) => boolean) =>
  (frame: SseFrame): boolean => {
    if (frame.event !== 'app' || frame.data === undefined) return false;
    const event = JSON.parse(frame.data) as AppEventData;
    return event.app_id === appId && match(event);
  };

/** The steps in the order they came, each once. */
function stepsOf(events: AppEventData[]): string[] {
  const steps: string[] = [];
  for (const e of events) {
    const step = e.activity?.step;
    if (step && steps.at(-1) !== step) steps.push(step);
  }
  return steps;
}

/**
 * Issue 29 through the real API, real sandboxes and the event stream: a general-lane deploy shows
 * what it does (activity) while it installs, builds and starts, and the deploy in flight can be
 * cancelled while the version that served goes on serving.
 */
describe('deploy activity and cancel end to end (real HTTP, real sandboxes)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
        ],
      },
      runtime: { poolSize: 1 },
    });
  }, SLOW);
  afterAll(() => server?.stop());

  it(
    'shows the activity moving through installing, building, starting and health-checking, then none once live',
    async () => {
      const sse = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
      try {
        const source = await tarGz(slowBuildFiles('built and live', { lines: 10 }));
        const deploying = deploy(server.baseURL, ALICE, { name: 'act-build' }, source);
        // While it builds, the app view says so, with the build's newest line and a poll hint.
        await sse.waitFor(
          isEventOf('act-build', (e) => e.activity?.step === 'building'),
          'the building step',
          SLOW,
        );
        const seen = await call(server.baseURL, '/v1/apps/act-build', { token: ALICE });
        const app = seen.body as Record<string, unknown> & { activity?: Activity };
        expect(app.phase).toBe('Starting');
        expect(app.activity?.step).toMatch(/^(building|starting|health-checking)$/);
        expect(Date.parse(String(app.activity?.since))).not.toBeNaN();
        expect(app.poll_after_seconds).toBeGreaterThanOrEqual(1);
        const listed = await call(server.baseURL, '/v1/apps', { token: ALICE });
        const item = (listed.body as { items: Array<Record<string, unknown>> }).items.find(
          (a) => a.app_id === 'act-build',
        );
        expect(item?.activity).toBeDefined();

        await sse.waitFor(
          isEventOf('act-build', (e) => e.phase === 'Ready'),
          'the app Ready',
          SLOW,
        );
        const answered = await deploying;
        expect([200, 202], JSON.stringify(answered.body)).toContain(answered.status);
        const events = eventsOf(sse, 'act-build');
        const steps = stepsOf(events);
        const order = ['installing', 'building', 'starting', 'health-checking'].map((s) =>
          steps.indexOf(s),
        );
        expect(
          order.every((at) => at >= 0),
          steps.join(' → '),
        ).toBe(true);
        expect([...order].sort((a, b) => a - b)).toEqual(order);
        // The build's own lines came with the activity, untagged.
        const lines = events.flatMap((e) => (e.activity?.last_line ? [e.activity.last_line] : []));
        expect(
          lines.some((l) => BUILD_LINE.test(l)),
          lines.join('\n'),
        ).toBe(true);
        expect(events.every((e) => !e.activity || (e.poll_after_seconds ?? 0) >= 1)).toBe(true);

        const live = await call(server.baseURL, '/v1/apps/act-build', { token: ALICE });
        const body = live.body as Record<string, unknown>;
        expect(body).toMatchObject({ phase: 'Ready', live_version: 1 });
        expect(body.activity).toBeUndefined();
        expect(body.poll_after_seconds).toBeUndefined();
        expect((await fetchApp(String(body.url))).body).toBe('built and live');
        // First deploy: nothing served before, so no traffic to switch.
        expect(steps).not.toContain('switching');
      } finally {
        sse.close();
      }
    },
    SLOW,
  );

  it(
    'shows a redeploy checking the new release, then switching the traffic to it, before Ready',
    async () => {
      const first = await deploy(
        server.baseURL,
        ALICE,
        { name: 'act-switch' },
        await tarGz(quickFiles('blue')),
      );
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const sse = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
      try {
        const second = await deploy(
          server.baseURL,
          ALICE,
          { name: 'act-switch' },
          await tarGz(quickFiles('green')),
        );
        expect(second.status, JSON.stringify(second.body)).toBe(200);
        await sse.waitFor(
          isEventOf('act-switch', (e) => e.phase === 'Ready' && e.activity === undefined),
          'the redeploy Ready',
          SLOW,
        );
        const events = eventsOf(sse, 'act-switch');
        const steps = stepsOf(events);
        expect(steps.slice(-3), steps.join(' → ')).toEqual([
          'starting',
          'health-checking',
          'switching',
        ]);
        // The switch is announced while the release that served still serves: then Ready.
        const switching = events.findIndex((e) => e.activity?.step === 'switching');
        expect(events[switching]).toMatchObject({ phase: 'Starting', poll_after_seconds: 1 });
        expect(events.slice(switching + 1).find((e) => !e.activity)).toMatchObject({
          phase: 'Ready',
        });
        expect((await fetchApp(String(first.body.url))).body).toBe('green');
        const logs = await call(server.baseURL, '/v1/apps/act-switch/logs?version=2', {
          token: ALICE,
        });
        expect(logs.text).toContain('[slipway] version 2: started, waiting for it to answer');
        expect(logs.text).toContain('[slipway] switching traffic to version 2');
      } finally {
        sse.close();
      }
    },
    SLOW,
  );

  it(
    'cancels the deploy in flight: the live version keeps serving, the new one is Cancelled',
    async () => {
      const first = await deploy(
        server.baseURL,
        ALICE,
        { name: 'act-cancel' },
        await tarGz(quickFiles('version one')),
      );
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const url = String(first.body.url);
      expect(
        (await call(server.baseURL, '/v1/apps/act-cancel/cancel', { method: 'POST', token: ALICE }))
          .body,
      ).toMatchObject({ code: 'nothing_to_cancel' });

      const sse = await SseClient.open(`${server.baseURL}/api/events`, ALICE);
      try {
        const slow = await tarGz(slowBuildFiles('version two', { lines: 200, everyMs: 250 }));
        const deploying = deploy(server.baseURL, ALICE, { name: 'act-cancel' }, slow);
        await sse.waitFor(
          isEventOf('act-cancel', (e) => e.activity?.step === 'building'),
          'the building step',
          SLOW,
        );
        // Another owner cannot cancel it, nor learn that the app exists.
        const bobs = await call(server.baseURL, '/v1/apps/act-cancel/cancel', {
          method: 'POST',
          token: BOB,
        });
        expect(bobs.status).toBe(404);
        const anonymous = await call(server.baseURL, '/v1/apps/act-cancel/cancel', {
          method: 'POST',
        });
        expect(anonymous.status).toBe(401);

        const cancelled = await call(server.baseURL, '/v1/apps/act-cancel/cancel', {
          method: 'POST',
          token: ALICE,
        });
        expect(cancelled.status, cancelled.text).toBe(200);
        expect(cancelled.body).toMatchObject({
          phase: 'Ready',
          live_version: 1,
          last_deploy: { version: 2, outcome: 'Cancelled', reason: 'Cancelled' },
        });
        expect((cancelled.body as Record<string, unknown>).activity).toBeUndefined();
        // The deploy request that waited for it is told its version never served, and what does.
        const answered = await deploying;
        expect(answered).toMatchObject({
          status: 500,
          body: {
            code: 'deploy_failed',
            details: { reason: 'Cancelled', phase: 'Ready', live_version: 1 },
          },
        });
        expect(answered.body.message).toContain('version 1 is still serving');

        expect(await fetchApp(url)).toMatchObject({ status: 200, body: 'version one' });
        const versions = await call(server.baseURL, '/v1/apps/act-cancel/versions', {
          token: ALICE,
        });
        const items = (versions.body as { items: Array<Record<string, unknown>> }).items;
        expect(items.find((v) => v.version === 2)).toMatchObject({ outcome: 'Cancelled' });
        expect(items.find((v) => v.version === 1)).toMatchObject({ outcome: 'Ready', live: true });
        const again = await call(server.baseURL, '/v1/apps/act-cancel/cancel', {
          method: 'POST',
          token: ALICE,
        });
        expect(again.status).toBe(409);
        expect(again.body).toMatchObject({ code: 'nothing_to_cancel' });
        const after = await waitForPhase(server.baseURL, ALICE, 'act-cancel', ['Ready']);
        expect(after).toMatchObject({ live_version: 1 });
        // The owner's feed says who cancelled which version, and that the second had nothing to do.
        const feed = await call(server.baseURL, '/v1/apps/act-cancel/audit', { token: ALICE });
        const cancels = (feed.body as { events: Array<Record<string, unknown>> }).events.filter(
          (e) => e.action === 'cancel',
        );
        // Newest first: the second cancel, the one that worked, Bob's refused one, the first.
        expect(cancels.map((e) => [e.outcome, e.details])).toEqual([
          ['noop', undefined],
          ['ok', { version: 2 }],
          ['denied', expect.objectContaining({ reason: 'not_found' })],
          ['noop', undefined],
        ]);
      } finally {
        sse.close();
      }
    },
    SLOW,
  );
});
