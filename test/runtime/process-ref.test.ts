/**
 * Teardown knows a process by its pid and its start time. A pid freed by a process that ended is
 * soon another's when a fork bomb runs next door; waiting on it by number alone waited on (and
 * SIGKILLed) that stranger, and tests that checked pids by number saw it as a survivor.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { processTree, statFields } from '../../src/runtime/local/process-tree.js';
import { gone, processRef, runs, type ProcessRef } from '../../src/runtime/local/teardown.js';
import { eventually } from './support.js';

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

async function sleeper(): Promise<ChildProcess> {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  started.push(child);
  await once(child, 'spawn');
  return child;
}

describe('process refs', () => {
  it('gone() kills the very process it was given and waits until it has ended', async () => {
    const child = await sleeper();
    const ref = processRef(child.pid as number);
    expect(runs(ref)).toBe(true);
    const exited = once(child, 'exit');
    expect(await gone([ref])).toBe(true);
    expect(await exited).toEqual([null, 'SIGKILL']);
    expect(runs(ref)).toBe(false);
  });

  it('leaves alone a process that has the pid now but started at another time', async () => {
    const child = await sleeper();
    const pid = child.pid as number;
    const before = { pid, started: String(Number(processRef(pid).started) - 1) };
    expect(runs(before)).toBe(false);
    expect(await gone([before])).toBe(true);
    expect(runs(processRef(pid))).toBe(true);
    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
  });

  it('takes a zombie as ended, and a pid nobody has as no process', async () => {
    // `sleep 0` ends, and the shell it leaves behind (exec'd into `sleep 30`) never reaps it.
    const shell = spawn('sh', ['-c', 'sleep 0 & exec sleep 30'], { stdio: 'ignore' });
    started.push(shell);
    let zombie: ProcessRef | undefined;
    await eventually(() => {
      const child = processTree(shell.pid as number)[1];
      if (child === undefined || statFields(child.pid)?.[0] !== 'Z') return false;
      zombie = processRef(child.pid);
      return true;
    }, 'the shell to leave a zombie');
    expect(zombie?.started).not.toBe('');
    expect(runs(zombie as ProcessRef)).toBe(false);
    expect(await gone([zombie as ProcessRef])).toBe(true);

    const nobody = 2 ** 22 + 1;
    expect(processRef(nobody)).toEqual({ pid: nobody, started: '' });
    expect(runs(processRef(nobody))).toBe(false);
  });
});
