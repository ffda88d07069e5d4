// The control plane run from its image (the bundle images.sh unpacked from slipway.oci.tar), as its
// Deployment would run it: the image's entry point (`node --import tsx src/main.ts` in
// /opt/slipway) on the image's Node, uid 65532, a read-only root, /data and /tmp as emptyDirs,
// its config mounted read-only at /etc/slipway/config (SVC_CONFIG), a memory limit. On the host's
// network: it listens on 127.0.0.1 and reaches the API server and moto there.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  createWriteStream,
  mkdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { call } from '../support/server.js';
import { freePort, waitFor } from './cluster.js';
import { imageProcess } from './image-run.js';
import { bytesOf } from './image-pod.js';

const UID = 65532;

export type ImageServer = { baseURL: string; pid: number | undefined; stop(): Promise<void> };

export async function startImageServer(opts: {
  bundle: string;
  /** Slipway's config; kubernetes.kubeconfig is copied in and pointed at the copy. */
  config: Record<string, unknown> & { kubernetes: { kubeconfig: string } };
  env: Record<string, string>;
  /** Where the config volume and the log go. */
  dir: string;
}): Promise<ImageServer> {
  const port = await freePort();
  const configDir = join(opts.dir, 'config');
  mkdirSync(configDir, { recursive: true });
  copyFileSync(opts.config.kubernetes.kubeconfig, join(configDir, 'kubeconfig'));
  const config = {
    ...opts.config,
    kubernetes: { ...opts.config.kubernetes, kubeconfig: '/etc/slipway/config/kubeconfig' },
  };
  writeFileSync(join(configDir, 'config.yaml'), stringify(config));
  // Readable by the pod's group (its fsGroup), as a volume's files would be; the kubeconfig holds
  // a token, so not by others.
  for (const [f, mode] of [
    ['', 0o750],
    ['kubeconfig', 0o640],
    ['config.yaml', 0o640],
  ] as const) {
    chownSync(join(configDir, f), 0, UID);
    chmodSync(join(configDir, f), mode);
  }
  const run = imageProcess({
    bundle: opts.bundle,
    name: `slipway-image-server-${port}`,
    tmpfs: [
      { path: '/data', bytes: bytesOf('1Gi') },
      { path: '/tmp', bytes: bytesOf('1Gi') },
    ],
    binds: [{ host: configDir, path: '/etc/slipway/config', readOnly: true }],
    memoryBytes: bytesOf('1Gi'),
    env: {
      ...opts.env,
      SVC_CONFIG: '/etc/slipway/config/config.yaml',
      SVC_LISTEN: `127.0.0.1:${port}`,
    },
  });
  const log = createWriteStream(join(opts.dir, 'slipway-image-server.log'));
  const child = spawn(run.command, run.args, { env: run.env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      run.cleanup();
      resolve();
    }),
  );
  const baseURL = `http://127.0.0.1:${port}`;
  const what = `the control plane from its image on ${baseURL} (log: ${opts.dir}/slipway-image-server.log)`;
  const up = waitFor(
    what,
    () =>
      fetch(`${baseURL}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    120_000,
    200,
  );
  await Promise.race([
    up,
    exited.then(() => {
      throw new Error(`${what}: exited ${child.exitCode}`);
    }),
  ]);
  return {
    baseURL,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `/readyz` once it answers 200 with the node pool's warm pod counted idle. */
export function waitForWarmReady(baseURL: string, token: string, timeoutMs: number) {
  type Ready = { components?: { runtime?: { pools?: Record<string, { idle: number }> } } };
  return waitFor(
    `${baseURL}/readyz 200 with a warm pod`,
    async () => {
      const res = await call(baseURL, '/readyz', { token });
      const pools = (res.body as Ready | undefined)?.components?.runtime?.pools;
      return res.status === 200 && pools?.node?.idle === 1 ? res : undefined;
    },
    timeoutMs,
    250,
  );
}
