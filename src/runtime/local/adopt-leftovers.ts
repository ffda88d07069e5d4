import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { callAgent } from './agent-client.js';
import type { HostSetup } from './host-setup.js';
import type { LocalSandbox } from './sandbox.js';
import { adoptSandbox, type FactoryOptions } from './sandbox-factory.js';
import type { SandboxRecord } from './sandbox-record.js';
import { killTree, removeCgroup, runs } from './teardown.js';
import type { Log } from '../../logging.js';

/**
 * What the last control plane left running (host.leftovers, whose pid and start time still
 * match): a sandbox that serves an app and whose agent answers to its recorded token is adopted
 * and returned; everything else of it (idle, mid-inject, mute, one whose doors cannot reopen) is
 * reaped. `hold` takes each adopted sandbox into the runtime's hands before it is asked.
 */
export async function adoptLeftovers(
  host: HostSetup,
  factory: FactoryOptions,
  hold: (sandbox: LocalSandbox) => void,
  log: Log,
): Promise<LocalSandbox[]> {
  const results = await Promise.all(
    host.leftovers.map(async (record) => {
      const sandbox = await adoptSandbox(host, factory, record).catch(async (err: unknown) => {
        log('warn', 'a sandbox left running could not be taken back', {
          sandbox: record.id,
          error: String(err),
        });
        await reapRecorded(host, record, log);
        return undefined;
      });
      if (!sandbox) return undefined;
      hold(sandbox);
      if (await answers(sandbox, record, log)) return sandbox;
      await sandbox.reap();
      return undefined;
    }),
  );
  const adopted = results.filter((s): s is LocalSandbox => s !== undefined);
  if (host.leftovers.length > 0) {
    log('info', 'sandboxes left running by the last process', {
      found: host.leftovers.length,
      adopted: adopted.length,
    });
  }
  return adopted;
}

/** Whether the agent of a left sandbox answers to its own token: only then is it ours. */
async function answers(sandbox: LocalSandbox, record: SandboxRecord, log: Log): Promise<boolean> {
  if (record.app === undefined || record.version === undefined) return false;
  try {
    const reply = await callAgent(sandbox.agentPath, record.token, 'GET', '/status', {
      timeoutMs: 5_000,
    });
    return reply.status === 200;
  } catch (err) {
    log('warn', 'a sandbox left running did not answer', {
      sandbox: record.id,
      error: String(err),
    });
    return false;
  }
}

/** A leftover that cannot even be taken back: its process tree, cgroup and dirs go by record. */
async function reapRecorded(host: HostSetup, record: SandboxRecord, log: Log): Promise<void> {
  const cgroup = host.cgroups.create(`sb-${record.id}`);
  const gone = (): boolean => !runs(record);
  const closed = new Promise<void>(() => undefined);
  await killTree({ pid: record.pid, graceful: false, cgroup, closed, isClosed: gone });
  await removeCgroup(cgroup, (level, msg, extra) =>
    log(level, msg, { sandbox: record.id, ...extra }),
  );
  host.users.release(record.owner);
  const { sandboxes, held, routes } = host.dirs;
  const left = [
    join(sandboxes, record.id),
    join(held, record.id),
    join(routes, `${record.id}.sock`),
  ];
  for (const dir of left) {
    await rm(dir, { recursive: true, force: true });
  }
}
