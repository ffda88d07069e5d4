import type { V1ConfigMap } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import {
  copyApp,
  copyDepartment,
  copyUser,
  copyVersion,
  newestVersionFirst,
  type MemoryState,
} from '../memory-state.js';
import type { AppRecord, DepartmentRecord, UserRecord, VersionRecord } from '../store.js';
import { KubeStoreFault } from './kube-fault.js';

/**
 * How the store's records map to ConfigMaps: one per app (its record and its versions), one per
 * user, one per department, one per meta key. Every record is stored whole as JSON, so a field
 * the records gain later is carried without a change here.
 */
export type ObjectKind = 'app' | 'user' | 'department' | 'meta';

/** `<kind>/<id>`: the unit the store writes, watches and resolves conflicts on. */
export type ObjectKey = `${ObjectKind}/${string}`;

export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const KIND_LABEL = 'slipway.dev/kind';
/** The label selector of every ConfigMap this store owns. */
export const SELECTOR = `${MANAGED_BY}=slipway`;
const ID_ANNOTATION = 'slipway.dev/id';

/**
 * What a ConfigMap's data may hold: the API server refuses more than 1 MiB (keys and values);
 * a little is kept back for the keys and for JSON that grows when re-encoded.
 */
export const MAX_DATA_BYTES = 1024 * 1024 - 8 * 1024;

export const objectKey = (kind: ObjectKind, id: string): ObjectKey => `${kind}/${id}`;

export function splitKey(key: ObjectKey): { kind: ObjectKind; id: string } {
  const at = key.indexOf('/');
  return { kind: key.slice(0, at) as ObjectKind, id: key.slice(at + 1) };
}

/**
 * The object's ConfigMap name: `slipway-<kind>-<id>` when the id is a DNS label (app names are),
 * else `slipway-<kind>.<sha256 of the id>`; the dot keeps the two forms from ever meeting.
 */
export function configMapName(key: ObjectKey): string {
  const { kind, id } = splitKey(key);
  if (DNS_LABEL.test(id) && id.length <= 63) return `slipway-${kind}-${id}`;
  return `slipway-${kind}.${createHash('sha256').update(id).digest('hex').slice(0, 40)}`;
}

/** The ConfigMap data the mirror holds for `key` now; undefined when the record is gone. */
export function dataOf(state: MemoryState, key: ObjectKey): Record<string, string> | undefined {
  const { kind, id } = splitKey(key);
  switch (kind) {
    case 'app': {
      const app = state.apps.get(id);
      if (app === undefined) return undefined;
      const versions = [...(state.versions.get(id)?.values() ?? [])].sort(newestVersionFirst);
      return { 'app.json': JSON.stringify(app), 'versions.json': JSON.stringify(versions) };
    }
    case 'user': {
      const user = state.users.get(id);
      return user && { 'user.json': JSON.stringify(user) };
    }
    case 'department': {
      const department = state.departments.get(id);
      return department && { 'department.json': JSON.stringify(department) };
    }
    case 'meta': {
      const value = state.meta.get(id);
      return value === undefined ? undefined : { 'meta.json': JSON.stringify({ key: id, value }) };
    }
  }
}

/** Bytes the API server counts for `data`. */
export function dataBytes(data: Record<string, string>): number {
  let n = 0;
  for (const [k, v] of Object.entries(data)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}

/** Throws a storage fault when the object would not fit in one ConfigMap. */
export function assertFits(state: MemoryState, key: ObjectKey): void {
  const data = dataOf(state, key);
  if (data === undefined) return;
  const bytes = dataBytes(data);
  if (bytes <= MAX_DATA_BYTES) return;
  const { kind, id } = splitKey(key);
  const what = kind === 'app' ? `app ${id}'s record and versions` : `${kind} ${id}`;
  throw new KubeStoreFault(
    'KUBE_TOO_LARGE',
    `${what} would take ${bytes} bytes, over the ${MAX_DATA_BYTES} a ConfigMap can hold`,
  );
}

/** The whole ConfigMap for `key` holding `data`; `resourceVersion` makes a replace conditional. */
export function configMapOf(
  key: ObjectKey,
  namespace: string,
  data: Record<string, string>,
  resourceVersion?: string,
): V1ConfigMap {
  const { kind, id } = splitKey(key);
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: configMapName(key),
      namespace,
      labels: { [MANAGED_BY]: 'slipway', [KIND_LABEL]: kind },
      annotations: { [ID_ANNOTATION]: id },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    data,
  };
}

/** The key of a ConfigMap of ours; throws on one whose kind or id cannot be read. */
export function keyOf(cm: V1ConfigMap): ObjectKey {
  const kind = cm.metadata?.labels?.[KIND_LABEL];
  const id = cm.metadata?.annotations?.[ID_ANNOTATION];
  if (!isKind(kind) || id === undefined || id === '') {
    throw new Error(
      `ConfigMap ${cm.metadata?.name ?? '?'} has no ${KIND_LABEL} or ${ID_ANNOTATION}`,
    );
  }
  return objectKey(kind, id);
}

/**
 * Puts what the ConfigMap holds into the mirror, replacing the object's records (`undefined`:
 * the object is gone). Validates before it changes anything; throws on a malformed object.
 */
export function applyToMirror(
  state: MemoryState,
  key: ObjectKey,
  cm: V1ConfigMap | undefined,
): void {
  const { kind, id } = splitKey(key);
  const data = cm?.data;
  switch (kind) {
    case 'app': {
      if (data === undefined) {
        state.apps.delete(id);
        state.versions.delete(id);
        return;
      }
      const app = copyApp(record(data, 'app.json', id) as unknown as AppRecord);
      const listed = JSON.parse(data['versions.json'] ?? '[]') as unknown;
      if (!Array.isArray(listed)) throw new Error(`app ${id}: versions.json is not a list`);
      const versions = (listed as VersionRecord[]).map((v) => {
        if (v?.appId !== id || !Number.isInteger(v.version)) {
          throw new Error(`app ${id}: a version that is not one of its own`);
        }
        return copyVersion(v);
      });
      state.apps.set(id, app);
      state.versions.set(id, new Map(versions.map((v) => [v.version, v])));
      return;
    }
    case 'user':
      if (data === undefined) state.users.delete(id);
      else state.users.set(id, copyUser(record(data, 'user.json', id) as unknown as UserRecord));
      return;
    case 'department':
      if (data === undefined) state.departments.delete(id);
      else
        state.departments.set(
          id,
          copyDepartment(record(data, 'department.json', id) as unknown as DepartmentRecord),
        );
      return;
    case 'meta': {
      if (data === undefined) {
        state.meta.delete(id);
        return;
      }
      const entry = JSON.parse(data['meta.json'] ?? 'null') as { key?: unknown; value?: unknown };
      if (entry?.key !== id || typeof entry.value !== 'string') {
        throw new Error(`meta ${id}: meta.json is not {key, value}`);
      }
      state.meta.set(id, entry.value);
    }
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const isKind = (kind: string | undefined): kind is ObjectKind =>
  kind === 'app' || kind === 'user' || kind === 'department' || kind === 'meta';

/** The JSON record under `name`, checked to be an object with the id it is filed under. */
function record(data: Record<string, string>, name: string, id: string): Record<string, unknown> {
  const text = data[name];
  if (text === undefined) throw new Error(`${name} missing`);
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || (parsed as { id?: unknown }).id !== id) {
    throw new Error(`${name} is not the record of ${id}`);
  }
  return parsed as Record<string, unknown>;
}
