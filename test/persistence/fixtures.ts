import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  AppRecord,
  AuditEvent,
  DepartmentRecord,
  ShareLinkRecord,
  UserRecord,
  VersionRecord,
} from '../../src/persistence/store.js';

/** A fresh directory under the OS temp dir, and a function that removes it. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function app(id: string, extra: Partial<AppRecord> = {}): AppRecord {
  return {
    id,
    name: id,
    ownerId: 'alice',
    phase: 'Ready',
    reason: 'Deployed',
    message: '',
    lane: 'fast',
    template: 'node',
    env: [{ name: 'A', value: '1' }],
    allowedHosts: ['*.example.com'],
    ttl: '30m',
    currentVersion: 1,
    createdAt: '2025-01-01T00:00:00.000Z',
    lastDeployedAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  };
}

export function version(appId: string, n: number, extra: Partial<VersionRecord> = {}) {
  const v: VersionRecord = {
    appId,
    version: n,
    timestamp: `2025-01-01T00:00:0${n % 10}.000Z`,
    template: 'node',
    lane: 'fast',
    sourceHash: `sha256:${n}`,
    sourceKey: `${appId}.v${n}.${'0'.repeat(31)}${n % 10}`,
    ...extra,
  };
  return v;
}

export function user(id: string, extra: Partial<UserRecord> = {}): UserRecord {
  return {
    id,
    name: id,
    role: 'user',
    status: 'active',
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  };
}

export function department(id: string, extra: Partial<DepartmentRecord> = {}): DepartmentRecord {
  return { id, name: `Dept ${id}`, createdAt: '2025-01-01T00:00:00.000Z', ...extra };
}

export function link(token: string, appId: string, extra: Partial<ShareLinkRecord> = {}) {
  const l: ShareLinkRecord = {
    token,
    appId,
    ownerId: 'alice',
    createdAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  };
  return l;
}

export function audit(id: string, time: string, extra: Partial<AuditEvent> = {}): AuditEvent {
  return {
    id,
    time,
    actor: 'alice',
    action: 'deploy',
    target: 'web',
    outcome: 'ok',
    tenant_id: 'default',
    source_hash: 'sha256:abc',
    ...extra,
  };
}
