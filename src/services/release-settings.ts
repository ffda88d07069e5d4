/**
 * The settings a release runs with besides its source (env, egress hosts, ttl), validated alike
 * for a deploy's metadata and for PATCH /v1/apps/{id}. Each door words a refusal its own way
 * (`refuse`), so the field named is the one the caller sent.
 */
import type { AppError } from '../errors.js';
import { parseDuration } from '../config/duration.js';
import type { EnvItem } from '../persistence/store.js';
import { parseHostEntry } from '../runtime/egress/egress-hosts.js';

export type Refuse = (field: string, problem: string) => AppError;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_ENV_ITEMS = 200;
const MAX_ENV_BYTES = 64 * 1024;
const MAX_HOSTS = 100;
/** Set by the service, never by a user: a user setting them could break or escape the runner. */
const RESERVED_ENV = new Set(['PORT', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'NODE_OPTIONS']);

/** An env variable's name, as `field` of the request. */
export function validateEnvName(name: unknown, field: string, refuse: Refuse): string {
  if (typeof name !== 'string' || !ENV_NAME.test(name)) {
    throw refuse(
      field,
      'must be a variable name: letters, digits and _, not starting with a digit',
    );
  }
  if (RESERVED_ENV.has(name) || name.startsWith('SLIPWAY_')) {
    throw refuse(field, `${name} is set by Slipway and cannot be overridden`);
  }
  return name;
}

/** A list of `{name, value}`; absent (or null): undefined, which a deploy reads as "keep". */
export function validateEnv(env: unknown, field: string, refuse: Refuse): EnvItem[] | undefined {
  if (env === undefined || env === null) return undefined;
  if (!Array.isArray(env)) throw refuse(field, 'must be an array of {name, value}');
  const seen = new Set<string>();
  const items = env.map((item: unknown, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(item)) throw refuse(at, 'must be an object {name, value}');
    const name = validateEnvName(item.name, `${at}.name`, refuse);
    if (typeof item.value !== 'string') throw refuse(`${at}.value`, 'must be a string');
    if (seen.has(name)) throw refuse(`${at}.name`, `${name} appears twice`);
    seen.add(name);
    if (Object.keys(item).some((k) => k !== 'name' && k !== 'value')) {
      throw refuse(at, 'may only have name and value');
    }
    return { name, value: item.value };
  });
  checkEnvSize(items, field, refuse);
  return items;
}

/** The limits on a whole env: what a release may run with, however it was put together. */
export function checkEnvSize(env: EnvItem[], field: string, refuse: Refuse): void {
  if (env.length > MAX_ENV_ITEMS) throw refuse(field, `must have at most ${MAX_ENV_ITEMS} items`);
  const bytes = env.reduce((sum, e) => sum + e.name.length + e.value.length, 0);
  if (bytes > MAX_ENV_BYTES) throw refuse(field, 'is larger than 64 KiB in total');
}

/** `{allowed_hosts}`; absent (or null): undefined ("keep"); present without hosts: none. */
export function validateEgress(egress: unknown, refuse: Refuse): string[] | undefined {
  if (egress === undefined || egress === null) return undefined;
  if (!isObject(egress)) throw refuse('egress', 'must be an object {allowed_hosts}');
  if (Object.keys(egress).some((k) => k !== 'allowed_hosts')) {
    throw refuse('egress', 'may only have allowed_hosts');
  }
  const hosts = egress.allowed_hosts;
  if (hosts === undefined || hosts === null) return [];
  if (!Array.isArray(hosts)) throw refuse('egress.allowed_hosts', 'must be an array of host names');
  if (hosts.length > MAX_HOSTS) {
    throw refuse('egress.allowed_hosts', `must have at most ${MAX_HOSTS} hosts`);
  }
  return hosts.map((host: unknown, i) => {
    // The gate reads entries with this same parser: what passes here is what it enforces.
    if (typeof host !== 'string' || !parseHostEntry(host)) {
      throw refuse(
        `egress.allowed_hosts[${i}]`,
        'must be a host name, *.domain wildcard or IP address, optionally with a port ' +
          '(host:8443, *.example.org:8443, [::1]:8080); without one, ports 80 and 443 only',
      );
    }
    return host.toLowerCase();
  });
}

/** A duration of at least 1s; absent, null or empty: undefined ("keep", or 30m for a new app). */
export function validateTtl(ttl: unknown, refuse: Refuse): string | undefined {
  if (ttl === undefined || ttl === null || ttl === '') return undefined;
  if (typeof ttl !== 'string') throw refuse('ttl', 'must be a duration string such as 30m or 2h');
  const ms = parseDuration(ttl);
  if (ms === undefined) throw refuse('ttl', `"${ttl}" is not a duration such as 30m, 1h30m or 90s`);
  if (ms < 1000) throw refuse('ttl', 'must be at least 1s');
  return ttl;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
