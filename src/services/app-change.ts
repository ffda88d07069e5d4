/**
 * PATCH /v1/apps/{id} and MCP `update_app`: what an owner changes without sending source. Access is
 * a setting of the app; env, ttl and egress hosts are a release's, so changing them makes a config
 * release (the live source with the new settings). Env values are write-only: set by name, unset by
 * name, never read back.
 */
import { AppError } from '../errors.js';
import type { Release } from '../persistence/release.js';
import type { Access, AppRecord, EnvItem, Store, VersionRecord } from '../persistence/store.js';
import { TEMPLATES } from '../sources/classify.js';
import {
  checkEnvSize,
  isObject,
  MAX_ENV_ITEMS,
  validateEgress,
  validateEnv,
  validateEnvName,
  validateTtl,
  type Refuse,
} from './release-settings.js';

export interface AppChange {
  access?: Access;
  env?: { set: EnvItem[]; unset: string[] };
  ttl?: string;
  allowedHosts?: string[];
}

const refuse: Refuse = (field, problem) =>
  new AppError(400, 'bad_request', `${field} ${problem}`, { field });

/** Validates a change as sent (HTTP body, MCP arguments): unknown fields and empty changes too. */
export function validateChange(value: unknown): AppChange {
  if (!isObject(value)) throw refuse('body', 'must be a JSON object');
  const known = new Set(['access', 'env', 'ttl', 'egress']);
  for (const key of Object.keys(value)) if (!known.has(key)) throw refuse(key, 'is not a setting');
  const change: AppChange = {};
  if (value.access !== undefined) {
    if (value.access !== 'public' && value.access !== 'private') {
      throw refuse('access', 'must be "public" or "private"');
    }
    change.access = value.access;
  }
  if (value.env !== undefined) change.env = validateEnvChange(value.env);
  if (value.ttl !== undefined) {
    const ttl = validateTtl(value.ttl, refuse);
    if (ttl === undefined) throw refuse('ttl', 'must be a duration such as 30m or 2h');
    change.ttl = ttl;
  }
  if (value.egress !== undefined) {
    change.allowedHosts = validateEgress(value.egress, refuse) ?? [];
  }
  if (Object.keys(change).length === 0) {
    throw refuse('body', 'must change at least one of access, env, ttl, egress');
  }
  return change;
}

function validateEnvChange(env: unknown): AppChange['env'] {
  if (!isObject(env)) throw refuse('env', 'must be an object {set, unset}');
  for (const key of Object.keys(env)) {
    if (key !== 'set' && key !== 'unset') throw refuse('env', 'may only have set and unset');
  }
  const set = validateEnv(env.set, 'env.set', refuse) ?? [];
  if (env.unset !== undefined && !Array.isArray(env.unset)) {
    throw refuse('env.unset', 'must be an array of variable names');
  }
  const names = (env.unset as unknown[] | undefined) ?? [];
  if (names.length > MAX_ENV_ITEMS) {
    throw refuse('env.unset', `must have at most ${MAX_ENV_ITEMS} names`);
  }
  const unset = names.map((name, i) => validateEnvName(name, `env.unset[${i}]`, refuse));
  unset.forEach((name, i) => {
    if (unset.indexOf(name) !== i) throw refuse(`env.unset[${i}]`, `${name} appears twice`);
    if (set.some((item) => item.name === name)) {
      throw refuse(`env.unset[${i}]`, `${name} is both set and unset`);
    }
  });
  if (set.length === 0 && unset.length === 0) {
    throw refuse('env', 'must set or unset at least one variable');
  }
  return { set, unset };
}

/** True when the change needs a new release (env, ttl or egress), not only a setting. */
export const releasesWith = (change: AppChange): boolean =>
  change.env !== undefined || change.ttl !== undefined || change.allowedHosts !== undefined;

/**
 * The release `change` makes of `release`: a set variable keeps its place, a new one goes last.
 * Unsetting a variable the release does not have is refused: a typo must not pass as done.
 */
export function applyChange(release: Release, change: AppChange): Release {
  const next: Release = { ...release };
  if (change.env) {
    const { set, unset } = change.env;
    unset.forEach((name, i) => {
      if (!release.env.some((item) => item.name === name)) {
        throw refuse(`env.unset[${i}]`, `${name} is not set`);
      }
    });
    const kept = release.env
      .filter((item) => !unset.includes(item.name))
      .map((item) => set.find((s) => s.name === item.name) ?? item);
    const added = set.filter((s) => !release.env.some((item) => item.name === s.name));
    next.env = [...kept, ...added];
    checkEnvSize(next.env, 'env', refuse);
  }
  if (change.ttl !== undefined) next.ttl = change.ttl;
  if (change.allowedHosts !== undefined) next.allowedHosts = change.allowedHosts;
  return next;
}

/** Whether two releases run with the same settings (a change that changes nothing makes none). */
export function sameSettings(a: Release, b: Release): boolean {
  const env = (r: Release) => JSON.stringify(r.env.map((e) => [e.name, e.value]));
  return (
    a.ttl === b.ttl &&
    env(a) === env(b) &&
    JSON.stringify(a.allowedHosts) === JSON.stringify(b.allowedHosts)
  );
}

/**
 * The version a config release takes its source from: the live one, or the newest while none
 * serves (an app that never started can be fixed by its settings). A newest version whose source
 * could not be classified has nothing to run: a config release of it is refused.
 */
export function configBase(store: Store, app: AppRecord): VersionRecord {
  const live =
    app.liveVersion === undefined ? undefined : store.getVersion(app.id, app.liveVersion);
  const base = live ?? store.listVersions(app.id)[0];
  if (!base || !(TEMPLATES as readonly string[]).includes(base.template)) {
    throw new AppError(
      400,
      'unknown_version',
      `no version of ${app.id} has source that can run; deploy its source first`,
    );
  }
  return base;
}
