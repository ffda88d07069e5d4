import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { motoPython } from './moto-venv.js';

/**
 * moto's S3-compatible server (moto[server], from the Python package index; its venv made once by
 * moto-venv.ts) for the S3 source store's tests. Each test file starts its own server on a free
 * loopback port.
 */
export { MOTO_VERSION } from './moto-venv.js';

/** Credentials moto accepts (any); set in the test process so the SDK's default chain finds them. */
export const MOTO_CREDENTIALS = {
  AWS_ACCESS_KEY_ID: 'slipway-test-key-id',
  AWS_SECRET_ACCESS_KEY: 'slipway-test-secret-access-key',
} as const;

/** Long enough for a cold venv and pip install on a slow CI machine. */
export const MOTO_SETUP_TIMEOUT_MS = 600_000;

export interface Moto {
  endpoint: string;
  port: number;
  /** A client for the tests' own look into the bucket. */
  client: S3Client;
  createBucket(name: string): Promise<void>;
  /** Stops the server (the store behind it is gone: calls fail to connect). */
  stop(): Promise<void>;
  /** Starts it again on the same port (moto keeps nothing: buckets must be created again). */
  restart(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const python = await motoPython();
  Object.assign(process.env, MOTO_CREDENTIALS);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined = await launch(python, port, endpoint);
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: {
      accessKeyId: MOTO_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: MOTO_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    },
  });
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running) await kill(running);
  };
  return {
    endpoint,
    port,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    stop,
    async restart() {
      await stop();
      child = await launch(python, port, endpoint);
    },
  };
}

async function launch(python: string, port: number, endpoint: string): Promise<ChildProcess> {
  const child = spawn(python, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...MOTO_CREDENTIALS },
  });
  // A test worker that dies without its afterAll must not leave the server running.
  const reap = (): void => void child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.off('exit', reap));
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`);
    // moto answers its own dashboard path once it listens.
    const up = await fetch(`${endpoint}/moto-api/`).then(
      (res) => res.status < 500,
      () => false,
    );
    if (up) return child;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await kill(child);
  throw new Error(`moto_server did not listen on ${endpoint} within 30 s: ${stderr}`);
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}
