import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { processTree } from '../../src/runtime/local/process-tree.js';
import { eventually } from './support.js';

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

function start(command: string, args: string[]): number {
  const child = spawn(command, args, { stdio: 'ignore' });
  started.push(child);
  return child.pid as number;
}

describe('processTree', () => {
  it('lists a process and its descendants, parents first, each with its parent', async () => {
    const sh = start('sh', ['-c', 'sleep 30 & (sleep 30 & wait) & wait']);
    let tree = processTree(sh);
    await eventually(
      () => (tree = processTree(sh)).length === 4,
      'the shell, its two children and a grandchild',
    );
    expect(tree[0]).toEqual({ pid: sh, ppid: 0 });
    const subshell = tree.find((p) => p.ppid === sh && tree.some((c) => c.ppid === p.pid));
    expect(subshell).toBeDefined();
    expect(tree.filter((p) => p.ppid === sh)).toHaveLength(2);
    // Parents before children: every entry's parent came earlier in the list.
    tree.slice(1).forEach((p, i) => {
      expect(tree.slice(0, i + 1).some((q) => q.pid === p.ppid)).toBe(true);
    });
  });

  it('finds the children a thread other than the main one started', async () => {
    // A worker thread's spawn makes a child of the process, listed under the worker's own task.
    const script =
      "const { Worker } = require('node:worker_threads');" +
      "new Worker(\"require('node:child_process').spawn('sleep', ['30'], { stdio: 'ignore' })\", { eval: true });" +
      'setInterval(() => {}, 1000);';
    const node = start(process.execPath, ['-e', script]);
    let tree = processTree(node);
    await eventually(() => (tree = processTree(node)).length === 2, "the worker's child");
    expect(tree[1]?.ppid).toBe(node);
  });

  it('is empty for a pid that does not run', () => {
    const gone = spawn('true');
    const pid = gone.pid as number;
    return new Promise<void>((resolve) =>
      gone.on('exit', () => {
        expect(processTree(pid)).toEqual([]);
        resolve();
      }),
    );
  });
});
