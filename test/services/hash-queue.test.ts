import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { HashQueue } from '../../src/services/hash-queue.js';

/** A task that finishes when the test says so, and records that it started. */
function gate(started: string[], name: string) {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { task: () => (started.push(name), done.then(() => name)), finish: () => finish() };
}

describe('the password hashing queue', () => {
  it('runs at most `concurrency` at once and takes keys in turns', async () => {
    const q = new HashQueue({ concurrency: 1, perKey: 10, total: 10 });
    const started: string[] = [];
    const tasks = ['a1', 'a2', 'a3', 'b1'].map((name) => gate(started, name));
    const runs = tasks.map((t, i) => q.run(i < 3 ? 'a' : 'b', t.task));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['a1']);
    for (const t of tasks) {
      t.finish();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(runs);
    // b1 came last but went second: a's burst waits behind itself, not in front of b.
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it('refuses past a key’s share and past the total with 429 too_many_attempts', async () => {
    const q = new HashQueue({ concurrency: 1, perKey: 2, total: 3 });
    const started: string[] = [];
    const held = ['a1', 'a2', 'b1'].map((name) => gate(started, name));
    const runs = held.map((t, i) => q.run(i < 2 ? 'a' : 'b', t.task));
    await expect(q.run('a', async () => 'a3')).rejects.toMatchObject({
      status: 429,
      code: 'too_many_attempts',
    });
    await expect(q.run('c', async () => 'c1')).rejects.toBeInstanceOf(AppError);
    for (const t of held) t.finish();
    await Promise.all(runs);
    // Freed: the same keys are served again.
    await expect(q.run('a', async () => 'again')).resolves.toBe('again');
    await expect(q.run('c', async () => 'c2')).resolves.toBe('c2');
  });

  it('frees the turn of a task that throws', async () => {
    const q = new HashQueue({ concurrency: 1, perKey: 1, total: 1 });
    await expect(q.run('a', () => Promise.reject(new Error('scrypt failed')))).rejects.toThrow(
      'scrypt failed',
    );
    await expect(q.run('a', async () => 'next')).resolves.toBe('next');
  });
});
