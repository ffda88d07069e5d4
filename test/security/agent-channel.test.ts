import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIAG_BYTES_PER_WINDOW } from '../../src/runtime/local/diag-limiter.js';
import { deploy, eventually, report, startRuntime, type TestRuntime } from '../runtime/support.js';

/**
 * A node app shares its process with the agent, so it can write to the agent's diagnostics fd:
 * the host must treat that channel as the app's, bounded in lines and bytes (issue #25 item 6:
 * ten 16 KB lines a second still reached the host log, about 13 GB a day), summarising what it
 * dropped, and unable to pose as the control plane's own fields.
 */
let t: TestRuntime;

beforeAll(async () => {
  t = await startRuntime({ poolSize: 1 });
});

afterAll(() => t?.close());

const LINES = 20_000;
/** Near the host's longest diagnostics line (16 KB), as the red team sent them. */
const PAD = 15_000;

describe('the agent diagnostics channel, written by a hostile app', () => {
  it('is capped in lines and bytes per sandbox, summarised, and cannot pose as ours', async () => {
    const sandbox = await deploy(t, 'node', {
      'server.js': `const fs = require('node:fs');
const line = JSON.stringify({ t: 'log', level: 'error', msg: 'flood', extra: { sandbox: 'forged', app: 'forged', level: 'forged', pad: 'x'.repeat(${PAD}) } }) + '\\n';
let sent = 0;
const flood = () => { for (let i = 0; i < 500; i++) { fs.writeSync(4, line); sent++; } if (sent < ${LINES}) setImmediate(flood); };
flood();
require('node:http').createServer((req, res) => res.end(String(sent))).listen(process.env.PORT);`,
    });
    await eventually(async () => (await report<number>(sandbox)) >= LINES, 'the whole flood sent');
    // Reaping drains the diagnostics pipe: every line sent is then either logged or counted.
    await t.runtime.reap(sandbox);

    const kept = t.logs.filter((l) => l.msg === 'agent: flood');
    const keptBytes = kept.reduce((sum, l) => sum + JSON.stringify(l.extra).length, 0);
    expect(kept.length).toBeGreaterThan(0);
    // One line's own fields (sandbox, level) are ours and small; the app's bytes are capped.
    expect(keptBytes).toBeLessThan(DIAG_BYTES_PER_WINDOW + 200 * kept.length);
    for (const line of kept) {
      const extra = line.extra as Record<string, unknown>;
      expect(extra.sandbox).toBe(sandbox.id);
      expect(extra.level).toBe('error');
      expect(extra.app).toBeUndefined();
      expect((extra.agent as Record<string, unknown>).sandbox).toBe('forged');
    }
    const summaries = t.logs
      .filter((l) => l.msg === 'agent diagnostics over their cap, dropped')
      .map((l) => l.extra as { sandbox: string; lines: number; bytes: number });
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.every((s) => s.sandbox === sandbox.id)).toBe(true);
    const droppedLines = summaries.reduce((sum, s) => sum + s.lines, 0);
    expect(kept.length + droppedLines).toBe(LINES);
    expect(summaries.reduce((sum, s) => sum + s.bytes, 0)).toBeGreaterThan(droppedLines * PAD);
  }, 60_000);
});
