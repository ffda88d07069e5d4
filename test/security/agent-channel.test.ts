import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, eventually, startRuntime, type TestRuntime } from '../runtime/support.js';

/**
 * A node app shares its process with the agent, so it can write to the agent's diagnostics fd:
 * the host must treat that channel as the app's, bounded in rate and unable to pose as the
 * control plane's own fields.
 */
let t: TestRuntime;

beforeAll(async () => {
  t = await startRuntime({ poolSize: 1 });
});

afterAll(() => t?.close());

describe('the agent diagnostics channel, written by a hostile app', () => {
  it('is rate-limited per sandbox and cannot overwrite sandbox, app or level', async () => {
    const sandbox = await deploy(t, 'node', {
      'server.js': `const fs = require('node:fs');
const line = JSON.stringify({ t: 'log', level: 'error', msg: 'flood', extra: { sandbox: 'forged', app: 'forged', level: 'forged', pad: 'x'.repeat(4000) } }) + '\\n';
let sent = 0;
const flood = () => { for (let i = 0; i < 2000; i++) { fs.writeSync(4, line); sent++; } if (sent < 20000) setImmediate(flood); };
flood();
require('node:http').createServer((req, res) => res.end(String(sent))).listen(process.env.PORT);`,
    });
    const floods = () => t.logs.filter((l) => l.msg === 'agent: flood');
    // The app sends 20,000 lines (about 80 MB) at once; wait until the host has read them all.
    await eventually(() => floods().some((l) => 'dropped' in (l.extra ?? {})), 'a dropped count');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const kept = floods();
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.length).toBeLessThan(200);
    for (const line of kept) {
      const extra = line.extra as Record<string, unknown>;
      expect(extra.sandbox).toBe(sandbox.id);
      expect(extra.level).toBe('error');
      expect(extra.app).toBeUndefined();
      expect((extra.agent as Record<string, unknown>).sandbox).toBe('forged');
    }
    const dropped = kept.reduce(
      (sum, l) => sum + Number((l.extra as { dropped?: number }).dropped ?? 0),
      0,
    );
    expect(dropped).toBeGreaterThan(1_000);
    await t.runtime.reap(sandbox);
  });
});
