import { AppError } from '../errors.js';
import type { Access, EnvItem } from '../persistence/store.js';
import { APP_NAME, APP_NAME_MAX } from '../sources/app-name.js';
import { TEMPLATES } from '../sources/classify.js';
import { isObject, validateEgress, validateEnv, validateTtl } from './release-settings.js';

/** The metadata's `runtime`: each field, when set, overrides what the classifier decides. */
export interface RuntimeAsk {
  lane?: 'fast' | 'general';
  template?: string;
  entrypoint?: string;
  build?: string;
}

/** Deploy metadata (spec §2), validated field by field. */
export interface DeployMetadata {
  name: string;
  /** Absent: a redeploy asks for what the live release asked for; `{}` asks for nothing. */
  runtime?: RuntimeAsk;
  /** Absent (env, egress, ttl): a redeploy keeps the live release's, a new app has none (ttl 30m). */
  env?: EnvItem[];
  allowedHosts?: string[];
  ttl?: string;
  /** Absent: a new app gets `apps.defaultAccess`, an existing one keeps its access. */
  access?: Access;
}

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
  const metadata: DeployMetadata = { name: validateName(value.name) };
  const runtime = validateRuntime(value.runtime);
  if (runtime !== undefined) metadata.runtime = runtime;
  const env = validateEnv(value.env, 'env', bad);
  if (env !== undefined) metadata.env = env;
  const allowedHosts = validateEgress(value.egress, bad);
  if (allowedHosts !== undefined) metadata.allowedHosts = allowedHosts;
  const ttl = validateTtl(value.ttl, bad);
  if (ttl !== undefined) metadata.ttl = ttl;
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

function validateRuntime(runtime: unknown): RuntimeAsk | undefined {
  if (runtime === undefined || runtime === null) return undefined;
  if (!isObject(runtime)) throw bad('runtime', 'must be an object');
  const out: RuntimeAsk = {};
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

function bad(field: string, problem: string): AppError {
  const message = field === 'metadata' ? `metadata ${problem}` : `metadata.${field} ${problem}`;
  return new AppError(400, 'bad_metadata', message, { field });
}
