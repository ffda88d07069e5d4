import { afterEach, describe, expect, it, vi } from 'vitest';
import { BootFailureLog, REPEAT_SUMMARY_MS, WarmPool } from '../../src/runtime/local/warm-pool.js';
import type { LocalSandbox } from '../../src/runtime/local/sandbox.js';
import type { Log } from '../../src/logging.js';

interface Line {
  msg: string;
  extra?: object;
  level: string;
}

function recorder(): { lines: Line[]; log: Log } {
  const lines: Line[] = [];
  return { lines, log: (level, msg, extra) => lines.push({ msg, extra, level }) };
}

describe('BootFailureLog', () => {
  it('warns once per distinct message, counts repeats into one line a minute, and says recovered', () => {
    const { lines, log } = recorder();
    let now = 0;
    const failures = new BootFailureLog(log, () => now);

    failures.failed('node', 'bwrap: no permission', 1_000);
    expect(lines).toEqual([
      {
        msg: 'warm pool: boot failed, retrying',
        extra: { template: 'node', error: 'bwrap: no permission', retryMs: 1_000 },
        level: 'warn',
      },
    ]);

    // The same failure retried for almost a minute: counted, not written.
    for (let i = 0; i < 5; i += 1) {
      now += 10_000;
      failures.failed('node', 'bwrap: no permission', 2_000);
    }
    expect(lines).toHaveLength(1);

    // A minute on: one summary with the count of repeats since the first line.
    now = REPEAT_SUMMARY_MS;
    failures.failed('node', 'bwrap: no permission', 30_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toEqual({
      msg: 'warm pool: boot failed, retrying',
      extra: { template: 'node', error: 'bwrap: no permission', repeated: 6, retryMs: 30_000 },
      level: 'warn',
    });

    // A new message is written at once; the old one's uncounted repeats are summarised first.
    now += 1_000;
    failures.failed('node', 'bwrap: no permission', 30_000);
    failures.failed('node', 'out of uids', 30_000);
    expect(lines.slice(2).map((l) => [l.level, l.extra])).toEqual([
      ['warn', { template: 'node', error: 'bwrap: no permission', repeated: 1 }],
      ['warn', { template: 'node', error: 'out of uids', retryMs: 30_000 }],
    ]);

    // Another template's failures are its own.
    failures.failed('python', 'out of uids', 1_000);
    expect(lines).toHaveLength(5);

    // Recovery: one info line with the count; a success without failures says nothing.
    failures.succeeded('node');
    failures.succeeded('static');
    expect(lines.slice(5)).toEqual([
      {
        msg: 'warm pool: boot recovered',
        extra: { template: 'node', failures: 9, lastError: 'out of uids' },
        level: 'info',
      },
    ]);
    // After a recovery, the next failure is news again.
    failures.failed('node', 'out of uids', 1_000);
    expect(lines.at(-1)?.level).toBe('warn');
    expect(lines.at(-1)?.extra).toEqual({ template: 'node', error: 'out of uids', retryMs: 1_000 });
  });
});

describe('WarmPool boot failures', () => {
  afterEach(() => vi.useRealTimers());

  it('logs a boot that keeps failing once, then its recovery', async () => {
    vi.useFakeTimers();
    const { lines, log } = recorder();
    let failing = 5;
    const sandbox = {
      alive: true,
      closed: new Promise<void>(() => undefined),
      reap: async () => undefined,
    } as unknown as LocalSandbox;
    const pool = new WarmPool({
      templates: ['node'],
      size: 1,
      log,
      boot: async () => {
        if (failing > 0) {
          failing -= 1;
          throw new Error('bwrap: setting up uid map: Permission denied');
        }
        return sandbox;
      },
    });
    pool.start();
    // Retries after 1, 2, 4, 8 and 16 s; the sixth boot succeeds.
    for (let i = 0; i < 40 && pool.status().node?.idle !== 1; i += 1) {
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(pool.status().node?.idle).toBe(1);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'warm pool: boot failed, retrying'],
      ['info', 'warm pool: boot recovered'],
    ]);
    expect(lines[1]?.extra).toMatchObject({ template: 'node', failures: 5 });
    await pool.stop();
  });

  it('stop waits for a boot a claim started and reaps it', async () => {
    let reaped = 0;
    let finish: (sandbox: LocalSandbox) => void = () => undefined;
    const sandbox = {
      alive: true,
      closed: new Promise<void>(() => undefined),
      reap: async () => {
        reaped += 1;
      },
    } as unknown as LocalSandbox;
    const pool = new WarmPool({
      templates: ['node'],
      size: 0,
      log: () => undefined,
      boot: () => new Promise<LocalSandbox>((resolve) => (finish = resolve)),
    });
    const claim = pool.claim('node');
    let stopped = false;
    const stopping = pool.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    finish(sandbox);
    await stopping;
    expect(reaped).toBe(1);
    await expect(claim).rejects.toThrow(/stopped/);
  });
});
