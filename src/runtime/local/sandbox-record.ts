import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SocketOwner } from './unix-listener.js';

/**
 * What the next control plane needs to know about a sandbox to adopt it: who it is (its bwrap pid
 * and that pid's start time, so a reused pid is never taken for it; its agent token) and what it
 * runs. Kept in the sandbox's held dir (`0700`, ours, never bound into any sandbox), `0600`: the
 * token is a secret. Nothing a sandbox can write is read here.
 */
export interface SandboxRecord {
  v: 1;
  id: string;
  template: string;
  pid: number;
  /** Field 22 of /proc/<pid>/stat at launch. */
  started: string;
  token: string;
  owner?: SocketOwner;
  /** The app and version it serves once an inject succeeded; an idle one has neither. */
  app?: string;
  version?: number;
  allowedHosts: string[];
}

const RECORD = 'record.json';

/** Written whole and renamed over the last one, so a crash never leaves half a record. */
export function writeRecord(heldDir: string, record: SandboxRecord): void {
  const tmp = join(heldDir, `${RECORD}.tmp`);
  writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
  renameSync(tmp, join(heldDir, RECORD));
}

/** The record in a held dir, or undefined when there is none or it does not read as one. */
export function readRecord(heldDir: string): SandboxRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(join(heldDir, RECORD), 'utf8'));
  } catch (err) {
    // No record yet (killed mid-boot) or a torn one: the caller reaps what it can find.
    if (err instanceof SyntaxError || (err as NodeJS.ErrnoException).code === 'ENOENT') {
      return undefined;
    }
    throw err;
  }
  const r = value as Partial<SandboxRecord>;
  const ok =
    r.v === 1 &&
    typeof r.id === 'string' &&
    typeof r.template === 'string' &&
    Number.isInteger(r.pid) &&
    typeof r.started === 'string' &&
    typeof r.token === 'string' &&
    Array.isArray(r.allowedHosts);
  return ok ? (r as SandboxRecord) : undefined;
}

/** The ids of the held dirs under `root`. */
export function heldIds(root: string): string[] {
  return readdirSync(root).filter((id) => /^[0-9a-f]{12}$/.test(id));
}
