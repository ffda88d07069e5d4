/**
 * Issue #25 item 1: the host guard took any `*.localhost` Origin, which is exactly what the apps'
 * own pages have. A page served by one app, open in the operator's browser, posted a `no-cors`
 * multipart form to /v1/deploy and replaced another app's code; `POST .../resume` worked too. An
 * app's origin is now foreign to the control plane in every auth mode, and with auth disabled a
 * request that changes something needs the control plane's own Origin, or no Origin and a request
 * no web form can send. The dashboard and the CLI still deploy.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/run-cli.js';
import { launchChromium, withTab } from '../support/chromium.js';
import { fetchApp } from '../support/deploy.js';
import { call, startTestServer, type RawConfig, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const LIVE = 60_000;
const STATIC_EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'static');

interface Seen {
  method: string;
  url: string;
  origin: string | undefined;
  status: number;
}

/** The attacker's page: a multipart deploy over `victim` and a resume of `sleeper`, both no-cors. */
function attackPage(controlPlane: string, tarball: Buffer): string {
  return `<!doctype html><title>waiting</title><script>
(async () => {
  const bytes = Uint8Array.from(atob('${tarball.toString('base64')}'), (c) => c.charCodeAt(0));
  const form = new FormData();
  form.set('metadata', JSON.stringify({ name: 'victim' }));
  form.set('source', new Blob([bytes], { type: 'application/gzip' }), 'source.tar.gz');
  await fetch('${controlPlane}/v1/deploy', { method: 'POST', mode: 'no-cors', body: form });
  await fetch('${controlPlane}/v1/apps/sleeper/resume', { method: 'POST', mode: 'no-cors' });
  document.title = 'sent';
})().catch((err) => { document.title = 'error ' + err; });
</script>`;
}

/** One control plane under attack, with the way its operator's browser is signed in. */
class Target {
  readonly seen: Seen[] = [];
  private constructor(
    readonly server: TestServer,
    /** What every request of the operator carries: nothing, or the proxy's user header. */
    readonly session: Record<string, string>,
  ) {
    server.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      res.on('finish', () =>
        this.seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          origin: req.headers.origin,
          status: res.statusCode,
        }),
      );
    });
  }

  static async start(raw: RawConfig, session: Record<string, string>): Promise<Target> {
    return new Target(await startTestServer({ ...raw, runtime: { poolSize: 1 } }), session);
  }

  get base(): string {
    return this.server.baseURL;
  }

  /** As the operator's own tools send it: a deploy no web form could have sent. */
  async deploy(name: string, files: Record<string, string>): Promise<string> {
    const form = new FormData();
    form.set('metadata', JSON.stringify({ name }));
    const source = new Uint8Array(await tarGz(files));
    form.set('source', new Blob([source], { type: 'application/gzip' }), 'source.tar.gz');
    const headers = { ...this.session, 'x-requested-with': 'test' };
    const res = await fetch(`${this.base}/v1/deploy`, { method: 'POST', body: form, headers });
    expect([200, 202], await res.clone().text()).toContain(res.status);
    return String((await this.waitFor(name, ['Ready'])).url);
  }

  async app(name: string): Promise<Record<string, unknown>> {
    const res = await call(this.base, `/v1/apps/${name}`, { headers: this.session });
    return res.body as Record<string, unknown>;
  }

  async waitFor(name: string, phases: string[]): Promise<Record<string, unknown>> {
    const deadline = Date.now() + LIVE;
    for (;;) {
      const app = await this.app(name);
      if (phases.includes(String(app.phase))) return app;
      if (Date.now() > deadline) throw new Error(`${name} never got to ${phases.join('/')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe.each([
  ['auth disabled', { auth: { enabled: false } }, {}],
  [
    'a trusted proxy signing the browser in',
    { auth: { mode: 'oauth' } },
    { 'x-forwarded-user': 'erin' },
  ],
] as const)(
  "an app's page in the operator's browser, with %s",
  { timeout: 2 * LIVE },
  (_, raw, session) => {
    let browser: Browser;
    let target: Target;
    let victimUrl: string;
    let attackerUrl: string;
    beforeAll(async () => {
      browser = await launchChromium();
      target = await Target.start(raw as RawConfig, session);
      victimUrl = await target.deploy('victim', { 'index.html': '<p>the real victim</p>' });
      await target.deploy('sleeper', { 'index.html': '<p>asleep</p>' });
      const suspend = await call(target.base, '/v1/apps/sleeper/suspend', {
        method: 'POST',
        headers: { ...session, 'x-requested-with': 'test' },
      });
      expect(suspend.status).toBe(200);
      await target.waitFor('sleeper', ['Suspended']);
      const defaced = await tarGz({ 'index.html': '<p>defaced</p>' });
      attackerUrl = await target.deploy('attacker', {
        'index.html': attackPage(target.base, defaced),
      });
    }, 4 * LIVE);
    afterAll(async () => {
      await browser?.close();
      await target?.server.stop();
    });

    it('cannot deploy over another app nor resume one', async () => {
      const context = await browser.newContext({ extraHTTPHeaders: session });
      try {
        const page = await context.newPage();
        await page.goto(`${attackerUrl}/`);
        await page.waitForFunction(() => document.title !== 'waiting', undefined, {
          timeout: LIVE,
        });
        expect(await page.title()).toBe('sent');
      } finally {
        await context.close();
      }
      const attacks = target.seen.filter((r) => r.origin === new URL(attackerUrl).origin);
      expect(attacks.map((r) => [r.method, r.url, r.status])).toEqual([
        ['POST', '/v1/deploy', 403],
        ['POST', '/v1/apps/sleeper/resume', 403],
      ]);
      expect((await fetchApp(victimUrl)).body).toContain('the real victim');
      expect(await target.app('victim')).toMatchObject({ phase: 'Ready', live_version: 1 });
      expect(await target.app('sleeper')).toMatchObject({ phase: 'Suspended' });
    });

    it("refuses even a read from an app's origin", async () => {
      const origin = new URL(attackerUrl).origin;
      const res = await call(target.base, '/v1/apps', { headers: { ...session, origin } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden' });
    });
  },
);

describe(
  'with auth disabled the operator’s own tools still change things',
  { timeout: 4 * LIVE },
  () => {
    let browser: Browser;
    let server: TestServer;
    beforeAll(async () => {
      browser = await launchChromium();
      server = await startTestServer({ auth: { enabled: false }, runtime: { poolSize: 1 } });
    });
    afterAll(async () => {
      await browser?.close();
      await server?.stop();
    });

    it('refuses a change that a web form could have sent, saying what to add', async () => {
      const form = new FormData();
      form.set('metadata', JSON.stringify({ name: 'formed' }));
      const res = await call(server.baseURL, '/v1/deploy', { method: 'POST', body: form });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'forbidden', message: /X-Requested-With/ });
      const other = await call(server.baseURL, '/v1/apps/x/resume', {
        method: 'POST',
        headers: { origin: `http://localhost:${new URL(server.baseURL).port}9` },
      });
      expect(other.status).toBe(403);
      // /mcp keeps its own rule: JSON only, which a form cannot send.
      const toolCall = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'list_apps' },
      };
      const mcp = await call(server.baseURL, '/mcp', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(toolCall),
      });
      expect(mcp.status).toBe(415);
    });

    it('deploys from the dashboard, which sends its own Origin', async () => {
      await withTab(browser, async (page) => {
        await page.goto(`${server.baseURL}/`);
        await page.getByRole('navigation').getByRole('link', { name: 'Deploy' }).click();
        await page.getByTestId('folder-input').setInputFiles(STATIC_EXAMPLE);
        await page.getByLabel('App name').fill('from-dashboard');
        await page.getByRole('button', { name: 'Deploy', exact: true }).click();
        await page.locator('.watch .badge', { hasText: 'Ready' }).waitFor({ timeout: LIVE });
      });
      const app = await call(server.baseURL, '/v1/apps/from-dashboard');
      expect(app.body).toMatchObject({ phase: 'Ready' });
    });

    it('deploys from the CLI without a key', async () => {
      const run = await runCli(['deploy', STATIC_EXAMPLE, '--name', 'from-cli'], {
        env: { SLIPWAY_URL: server.baseURL, SLIPWAY_TOKEN: undefined },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('from-cli');
    });
  },
);
