import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * moto's S3-compatible server (moto[server], from the Python package index) for the S3 source
 * store's tests. The venv is built once into `$SLIPWAY_CACHE` (default ~/.cache/slipway), as the
 * Schemathesis run does; each test file starts its own server on a free loopback port.
 */
export const MOTO_VERSION = '5.2.5';

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

const run = promisify(execFile);

/** The venv's python, built on first use; concurrent test files race to a rename, one wins. */
async function motoPython(): Promise<string> {
  const cache = process.env.SLIPWAY_CACHE ?? join(homedir(), '.cache', 'slipway');
  const venv = join(cache, `moto-${MOTO_VERSION}`);
  const python = join(venv, 'bin', 'python');
  if (existsSync(python)) return python;
  mkdirSync(cache, { recursive: true });
  // Built aside and renamed whole, so a half-built venv is never taken for a ready one. Run as
  // `python -m moto.server`, the venv needs no absolute paths in scripts and survives the rename.
  const building = `${venv}.building-${randomBytes(4).toString('hex')}`;
  try {
    await run('python3', ['-m', 'venv', building]);
    await run(join(building, 'bin', 'pip'), [
      'install',
      '--quiet',
      '--disable-pip-version-check',
      `moto[server]==${MOTO_VERSION}`,
    ]);
    try {
      renameSync(building, venv);
    } catch (err) {
      // Another test file's build won the race: its venv is as good as this one.
      if (!existsSync(python)) throw err;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return python;
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
