import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';

/** A configuration problem that stops the start; its message is one line naming the key. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

/** Reads the YAML file named by `SVC_CONFIG` (if any), applies `SVC_*` overrides and validates. */
export function loadConfig(env: Env = process.env): Config {
  const raw = env.SVC_CONFIG ? readYaml(env.SVC_CONFIG) : {};
  applyEnv(raw, env);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(describe(parsed.error.issues[0]));
  return parsed.data;
}

/** Validates an in-memory config object (tests and embedders), with the same error lines. */
export function parseConfig(raw: unknown): Config {
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) throw new ConfigError(describe(parsed.error.issues[0]));
  return parsed.data;
}

function readYaml(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config: cannot read SVC_CONFIG file ${path}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const line = (err as Error).message.split('\n')[0];
    throw new ConfigError(`config: ${path} is not valid YAML: ${line}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ConfigError(
      `config: ${path} must hold a mapping of keys (server, auth, limits, ...)`,
    );
  }
  return doc as Record<string, unknown>;
}

type Kind = 'string' | 'boolean' | 'integer';

/** Every `SVC_*` variable and the config key it overrides. */
const ENV_KEYS: ReadonlyArray<[string, string, Kind]> = [
  ['SVC_LISTEN', 'server.listen', 'string'],
  ['SVC_BASE_URL', 'server.baseURL', 'string'],
  ['SVC_APPS_DOMAIN', 'server.appsDomain', 'string'],
  ['SVC_DATA_DIR', 'server.dataDir', 'string'],
  ['SVC_LOG_LEVEL', 'server.logLevel', 'string'],
  ['SVC_RESTART_CONTINUITY', 'server.restartContinuity', 'boolean'],
  ['SVC_DATA_PATH', 'server.dataPath', 'string'],
  ['SVC_AUTH_ENABLED', 'auth.enabled', 'boolean'],
  ['SVC_AUTH_MODE', 'auth.mode', 'string'],
  ['SVC_AUTH_DEV_INSECURE', 'auth.devInsecure', 'boolean'],
  ['SVC_AUTH_IDENTITY_CACHE_TTL', 'auth.identityCacheTTL', 'string'],
  ['SVC_AUTH_OIDC_ISSUER', 'auth.oidc.issuer', 'string'],
  ['SVC_AUTH_OIDC_AUDIENCE', 'auth.oidc.audience', 'string'],
  ['SVC_AUTH_OIDC_ADMIN_ROLE', 'auth.oidc.adminRole', 'string'],
  ['SVC_TLS_ENABLED', 'auth.tls.enabled', 'boolean'],
  ['SVC_TLS_CERT_FILE', 'auth.tls.certFile', 'string'],
  ['SVC_TLS_KEY_FILE', 'auth.tls.keyFile', 'string'],
  ['SVC_TLS_AUTO', 'auth.tls.autoTLS', 'boolean'],
  ['SVC_APPS_DEFAULT_ACCESS', 'apps.defaultAccess', 'string'],
  ['SVC_STORE_BACKEND', 'store.backend', 'string'],
  ['SVC_STORE_PATH', 'store.path', 'string'],
  ['SVC_STORE_ENV_KEY', 'store.envKey', 'string'],
  ['SVC_RUNTIME_BACKEND', 'runtime.backend', 'string'],
  ['SVC_RUNTIME_DIR', 'runtime.dir', 'string'],
  ['SVC_SOURCES_BACKEND', 'sources.backend', 'string'],
  ['SVC_SOURCES_QUARANTINE_RETENTION', 'sources.quarantineRetention', 'string'],
  ['SVC_SOURCES_S3_ENDPOINT', 'sources.s3.endpoint', 'string'],
  ['SVC_SOURCES_S3_REGION', 'sources.s3.region', 'string'],
  ['SVC_SOURCES_S3_BUCKET', 'sources.s3.bucket', 'string'],
  ['SVC_SOURCES_S3_PREFIX', 'sources.s3.prefix', 'string'],
  ['SVC_SOURCES_S3_FORCE_PATH_STYLE', 'sources.s3.forcePathStyle', 'boolean'],
  ['SVC_SOURCES_S3_PRESIGN_EXPIRY', 'sources.s3.presignExpiry', 'string'],
  ['SVC_SOURCES_S3_TIMEOUT', 'sources.s3.timeout', 'string'],
  ['SVC_KUBERNETES_NAMESPACE', 'kubernetes.namespace', 'string'],
  ['SVC_KUBECONFIG', 'kubernetes.kubeconfig', 'string'],
  ['SVC_POD_NAME', 'runtime.kubernetes.egress.pod.name', 'string'],
  ['SVC_POD_UID', 'runtime.kubernetes.egress.pod.uid', 'string'],
  ['SVC_POD_IP', 'runtime.kubernetes.egress.pod.ip', 'string'],
  ['SVC_MAX_LOG_STREAMS_PER_USER', 'limits.maxConcurrentLogStreamsPerUser', 'integer'],
  ['SVC_MAX_STREAMS', 'limits.maxStreams', 'integer'],
  ['SVC_MAX_APPS_PER_OWNER', 'limits.maxAppsPerOwner', 'integer'],
  ['SVC_MAX_SANDBOX_MEMORY_MB_PER_OWNER', 'limits.maxSandboxMemoryMBPerOwner', 'integer'],
  ['SVC_HEADERS_TIMEOUT', 'server.headersTimeout', 'string'],
  ['SVC_MAX_PENDING_CONNECTIONS_PER_ADDRESS', 'server.maxPendingConnectionsPerAddress', 'integer'],
  ['SVC_SHUTDOWN_TIMEOUT', 'server.shutdownTimeout', 'string'],
];

function applyEnv(raw: Record<string, unknown>, env: Env): void {
  for (const [name, key, kind] of ENV_KEYS) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, key, convert(name, value, kind));
  }
  const apiKey = env.SVC_AUTH_API_KEY;
  if (apiKey !== undefined && apiKey !== '') {
    // One key from the environment is the operator of a one-key install: it gets the admin role.
    setPath(raw, 'auth.enabled', true);
    setPath(raw, 'auth.mode', 'apikey');
    setPath(raw, 'auth.apiKeys', [{ key: apiKey, name: 'default', role: 'admin' }]);
  }
}

function convert(name: string, value: string, kind: Kind): unknown {
  if (kind === 'string') return value;
  if (kind === 'boolean') {
    if (/^(true|1|yes)$/i.test(value)) return true;
    if (/^(false|0|no)$/i.test(value)) return false;
    throw new ConfigError(`config: ${name} must be true or false, got "${value}"`);
  }
  if (!/^-?\d+$/.test(value)) throw new ConfigError(`config: ${name} must be an integer`);
  return Number(value);
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1) as string] = value;
}

function describe(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return 'config: invalid configuration';
  const key = issue.path.join('.') || '(top level)';
  if (issue.code === 'unrecognized_keys') {
    const prefix = issue.path.length ? `${issue.path.join('.')}.` : '';
    return `config: unknown key ${issue.keys.map((k) => prefix + k).join(', ')}`;
  }
  return `config: ${key}: ${issue.message}`;
}
