import { AppError } from '../errors.js';
import { parseDuration } from '../config/duration.js';
import type { Access, EnvItem } from '../persistence/store.js';
import { parseHostEntry } from '../runtime/egress/egress-hosts.js';
import { APP_NAME, APP_NAME_MAX } from '../sources/app-name.js';
import { TEMPLATES } from '../sources/classify.js';

/** Deploy metadata (spec §2), validated field by field. */
export interface DeployMetadata {
  name: string;
  runtime: { lane?: 'fast' | 'general'; template?: string; entrypoint?: string; build?: string };
  env: EnvItem[];
  allowedHosts: string[];
  ttl: string;
  /** Absent: a new app gets `apps.defaultAccess`, an existing one keeps its access. */
  access?: Access;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_ENV_ITEMS = 200;
const MAX_ENV_BYTES = 64 * 1024;
const MAX_HOSTS = 100;
/** Set by the service, never by a user: a user setting them could break or escape the runner. */
const RESERVED_ENV = new Set(['PORT', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'NODE_OPTIONS']);

/** Parses the metadata part (a JSON string) of a deploy. */
export function parseMetadataJson(text: string | undefined): DeployMetadata {
  if (text === undefined)
    throw new AppError(400, 'missing_name', 'metadata part with a name is required');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError(
      400,
      'bad_metadata',
      `metadata is not valid JSON: ${(err as Error).message}`,
    );
  }
  return validateMetadata(value);
}

/** Validates a metadata object (HTTP and MCP share it). */
export function validateMetadata(value: unknown): DeployMetadata {
  if (!isObject(value)) throw bad('metadata', 'must be a JSON object');
  const known = new Set(['name', 'runtime', 'env', 'egress', 'ttl', 'access']);
  for (const key of Object.keys(value))
    if (!known.has(key)) throw bad(key, 'is not a metadata field');
  const metadata: DeployMetadata = {
    name: validateName(value.name),
    runtime: validateRuntime(value.runtime),
    env: validateEnv(value.env),
    allowedHosts: validateEgress(value.egress),
    ttl: validateTtl(value.ttl),
  };
  const access = validateAccess(value.access);
  if (access !== undefined) metadata.access = access;
  return metadata;
}

/** `public` or `private`; absent (or null): the app's current access, or the default. */
function validateAccess(access: unknown): Access | undefined {
  if (access === undefined || access === null) return undefined;
  if (access !== 'public' && access !== 'private') {
    throw bad('access', 'must be "public" or "private"');
  }
  return access;
}

export function validateName(name: unknown): string {
  if (name === undefined || name === null || name === '') {
    throw new AppError(400, 'missing_name', 'metadata.name is required');
  }
  if (typeof name !== 'string') throw bad('name', 'must be a string');
  if (name.length > APP_NAME_MAX) {
    throw bad('name', `must be at most ${APP_NAME_MAX} characters`);
  }
  if (!APP_NAME.test(name)) {
    throw bad(
      'name',
      'must be lowercase letters, digits and "-", starting and ending with a letter or digit',
    );
  }
  return name;
}

function validateRuntime(runtime: unknown): DeployMetadata['runtime'] {
  if (runtime === undefined || runtime === null) return {};
  if (!isObject(runtime)) throw bad('runtime', 'must be an object');
  const out: DeployMetadata['runtime'] = {};
  for (const [key, val] of Object.entries(runtime)) {
    if (key === 'lane') {
      if (val !== 'fast' && val !== 'general')
        throw bad('runtime.lane', 'must be "fast" or "general"');
      out.lane = val;
    } else if (key === 'template' || key === 'entrypoint') {
      if (typeof val !== 'string' || val === '' || val.length > 256) {
        throw bad(`runtime.${key}`, 'must be a non-empty string of at most 256 characters');
      }
      // Refused here, not as a Failed app: a typo must not cost a deploy or count against quota.
      if (key === 'template' && !(TEMPLATES as readonly string[]).includes(val)) {
        throw bad('runtime.template', `must be one of ${TEMPLATES.join(', ')}`);
      }
      if (key === 'entrypoint' && (val.startsWith('/') || val.split('/').includes('..'))) {
        throw bad('runtime.entrypoint', 'must be a relative path inside the source');
      }
      out[key] = val;
    } else if (key === 'build') {
      out.build = validateBuild(val);
    } else {
      throw bad(`runtime.${key}`, 'is not a runtime field (lane, template, entrypoint, build)');
    }
  }
  // The build makes what runs, and only the general lane runs a build: refused before any upload.
  if (out.build !== undefined && out.lane === 'fast') {
    throw bad(
      'runtime.build',
      'needs the general lane; leave runtime.lane out or set it to "general"',
    );
  }
  return out;
}

const MAX_BUILD = 1000;

/** One line for `sh -c`: a newline would hide a second command from the log's one-line echo. */
function validateBuild(val: unknown): string {
  if (typeof val !== 'string' || val.trim() === '' || val.length > MAX_BUILD) {
    throw bad('runtime.build', `must be a non-empty command of at most ${MAX_BUILD} characters`);
  }
  if (/[\0\r\n]/.test(val)) throw bad('runtime.build', 'must be one line, without NUL');
  return val;
}

function validateEnv(env: unknown): EnvItem[] {
  if (env === undefined || env === null) return [];
  if (!Array.isArray(env)) throw bad('env', 'must be an array of {name, value}');
  if (env.length > MAX_ENV_ITEMS) throw bad('env', `must have at most ${MAX_ENV_ITEMS} items`);
  const seen = new Set<string>();
  let bytes = 0;
  return env.map((item: unknown, i) => {
    const field = `env[${i}]`;
    if (!isObject(item)) throw bad(field, 'must be an object {name, value}');
    const { name, value } = item;
    if (typeof name !== 'string' || !ENV_NAME.test(name)) {
      throw bad(
        `${field}.name`,
        'must be a variable name: letters, digits and _, not starting with a digit',
      );
    }
    if (typeof value !== 'string') throw bad(`${field}.value`, 'must be a string');
    if (RESERVED_ENV.has(name) || name.startsWith('SLIPWAY_')) {
      throw bad(`${field}.name`, `${name} is set by Slipway and cannot be overridden`);
    }
    if (seen.has(name)) throw bad(`${field}.name`, `${name} appears twice`);
    seen.add(name);
    bytes += name.length + value.length;
    if (bytes > MAX_ENV_BYTES) throw bad('env', 'is larger than 64 KiB in total');
    if (Object.keys(item).some((k) => k !== 'name' && k !== 'value')) {
      throw bad(field, 'may only have name and value');
    }
    return { name, value };
  });
}

function validateEgress(egress: unknown): string[] {
  if (egress === undefined || egress === null) return [];
  if (!isObject(egress)) throw bad('egress', 'must be an object {allowed_hosts}');
  if (Object.keys(egress).some((k) => k !== 'allowed_hosts')) {
    throw bad('egress', 'may only have allowed_hosts');
  }
  const hosts = egress.allowed_hosts;
  if (hosts === undefined || hosts === null) return [];
  if (!Array.isArray(hosts)) throw bad('egress.allowed_hosts', 'must be an array of host names');
  if (hosts.length > MAX_HOSTS)
    throw bad('egress.allowed_hosts', `must have at most ${MAX_HOSTS} hosts`);
  return hosts.map((host: unknown, i) => {
    // The gate reads entries with this same parser: what passes here is what it enforces.
    if (typeof host !== 'string' || !parseHostEntry(host)) {
      throw bad(
        `egress.allowed_hosts[${i}]`,
        'must be a host name, *.domain wildcard or IP address, optionally with a port ' +
          '(host:8443, *.example.org:8443, [::1]:8080); without one, ports 80 and 443 only',
      );
    }
    return host.toLowerCase();
  });
}

function validateTtl(ttl: unknown): string {
  if (ttl === undefined || ttl === null || ttl === '') return '30m';
  if (typeof ttl !== 'string') throw bad('ttl', 'must be a duration string such as 30m or 2h');
  const ms = parseDuration(ttl);
  if (ms === undefined) throw bad('ttl', `"${ttl}" is not a duration such as 30m, 1h30m or 90s`);
  if (ms < 1000) throw bad('ttl', 'must be at least 1s');
  return ttl;
}

function bad(field: string, problem: string): AppError {
  const message = field === 'metadata' ? `metadata ${problem}` : `metadata.${field} ${problem}`;
  return new AppError(400, 'bad_metadata', message, { field });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
