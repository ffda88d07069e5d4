// Replicas of Slipway with leader election on the configmap store, as separate processes on the
// test cluster, and a small HTTP(S) client that can pick its source address (127.0.0.X: a trusted
// proxy or a stranger) and trust a test certificate. For the replica suites (TLS between
// replicas, proxy auth through a follower, the bootstrap admin).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { freePort, waitFor } from './cluster.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

export const LEASE_SECONDS = 6;

/** What a replica suite shares: its Slipway env, a folder for its replicas, and the replicas. */
class ReplicaSuite {
  env!: SlipwayEnv;
  root!: string;
  readonly replicas: Replica[] = [];
}

/**
 * Inside a `describe`: a Slipway env in namespace `ns` and a folder before its tests; after them
 * every replica killed, its output kept in the folder (`replica-N.log`), and the env stopped.
 */
export function replicaSuite(ns: string): ReplicaSuite {
  const suite = new ReplicaSuite();
  beforeAll(async () => {
    suite.env = await startSlipwayEnv(ns, `${ns}-sources`);
    suite.root = mkdtempSync(join(tmpdir(), `slipway-k8s-${ns.replace(/^slipway-/, '')}-`));
  }, MOTO_SETUP_TIMEOUT_MS);
  afterAll(async () => {
    for (const [i, r] of suite.replicas.entries()) {
      await r.proc.stop('SIGKILL');
      writeFileSync(join(suite.root, `replica-${i}.log`), r.proc.output().join('\n'));
    }
    await suite.env?.stop();
  });
  return suite;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The client's source address (any 127.0.0.X on loopback). */
  localAddress?: string;
  /** Trusted for an https URL (the test's certificate). */
  ca?: string;
}

/** One request; the answer whatever its status. */
export function call(url: string, opts: CallOptions = {}): Promise<Reply> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: opts.method ?? 'GET',
        headers: opts.headers,
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
        ...(opts.ca ? { ca: opts.ca, servername: 'slipway.test' } : {}),
        // A new connection each time: the source address is the point.
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Slipway's config for a replica of installation `instance` in `env` (merge the rest over it). */
export async function replicaConfig(
  env: SlipwayEnv,
  instance: string,
): Promise<Record<string, unknown>> {
  return {
    ...env.config(),
    store: { backend: 'configmap' },
    runtime: {
      backend: 'kubernetes',
      egress: { allowPrivate: ['127.0.0.1'] },
      poolSize: 0,
      kubernetes: {
        instance,
        leaderElection: { enabled: true, leaseSeconds: LEASE_SECONDS, renewSeconds: 1 },
        versions: { node: process.versions.node },
        // One gate port for every replica: only the leader listens on it.
        egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' },
      },
    },
  };
}

export interface Replica {
  proc: ServerProcess;
  /** http(s)://127.0.0.1:port */
  url: string;
}

/**
 * Starts a replica in `root/name`, adds it to `into` at once (the caller stops it, also when it
 * never gets ready) and waits until its `/readyz` answers 200 (over https trusting `ca`).
 * `wait: false`: returns once it runs.
 */
export async function startReplica(
  root: string,
  name: string,
  config: Record<string, unknown>,
  into: Replica[],
  opts: { ca?: string; wait?: boolean } = {},
): Promise<Replica> {
  const dataDir = join(root, name);
  mkdirSync(dataDir);
  const port = await freePort();
  const proc = await startServerProcess({
    dataDir,
    port,
    config,
    env: { ...MOTO_CREDENTIALS },
    noWait: true,
  });
  const replica = { proc, url: `${opts.ca ? 'https' : 'http'}://127.0.0.1:${port}` };
  into.push(replica);
  if (opts.wait === false) return replica;
  let ended: number | string | undefined;
  void proc.exited.then((code) => (ended = code));
  await waitFor(
    `${name} ready`,
    async () => {
      if (ended !== undefined) {
        throw new Error(`${name} exited (${ended}):\n${proc.output().join('\n')}`);
      }
      const res = await call(`${replica.url}/readyz`, { ca: opts.ca }).catch(() => undefined);
      return res?.status === 200;
    },
    READY_TIMEOUT_MS,
  );
  return replica;
}

/** A replica starting on a busy two-core machine, on a slow link to the API server in one suite. */
const READY_TIMEOUT_MS = 180_000;

/** Who the replica says leads (its `/readyz` leader component). */
export async function leaderOf(
  replica: Replica,
  opts: CallOptions = {},
): Promise<{ leading: boolean; identity: string; holder?: string }> {
  const res = await call(`${replica.url}/readyz`, opts);
  type Components = { components?: { leader?: { leading: boolean; identity: string } } };
  const body = JSON.parse(res.body) as Components & { details?: Components };
  const leader = (body.components ?? body.details?.components)?.leader;
  if (leader?.identity === undefined) throw new Error(`/readyz: ${res.body}`);
  return leader;
}
