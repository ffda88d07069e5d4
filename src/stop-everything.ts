import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { durationMs } from './config/schema.js';
import { ConfigError, loadConfig } from './config/load.js';
import { DataDirLocked, lockDataDir } from './persistence/data-dir-lock.js';
import { startSlipway } from './start.js';

/**
 * `npm run stop`: ends everything Slipway runs on this data dir. A SIGTERM with
 * `server.restartContinuity` on stops the control plane only: the apps' sandboxes and the front
 * door keep serving, for the next start to adopt. This stops the server that holds the data dir
 * (if one does), then does what a start without continuity and its stop do: takes the sandboxes
 * and the front door back, and ends them. The data dir and the database are found as `npm start`
 * finds them (SVC_CONFIG and SVC_* variables).
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const dataDir = resolve(config.server.dataDir);
  // The holder's own drain, plus time to let its sandboxes' output and the lock go.
  const stopped = await stopHolder(dataDir, durationMs(config.server.shutdownTimeout) + 15_000);
  if (stopped) console.log(`slipway: stopped the server (pid ${stopped}) on ${dataDir}`);
  const running = await startSlipway(
    {
      ...config,
      server: { ...config.server, restartContinuity: false },
      // Nothing is deployed here: warm sandboxes would only be booted to be ended.
      runtime: { ...config.runtime, poolSize: 0 },
    },
    { logger: { level: 'warn' }, transient: true },
  );
  await running.close();
  console.log(`slipway: stopped the apps' sandboxes and the front door of ${dataDir}`);
}

/** SIGTERMs the server holding the data dir and waits until its lock is free: its pid, if any. */
async function stopHolder(dataDir: string, waitMs: number): Promise<number | undefined> {
  let signalled: number | undefined;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const lock = await lockDataDir(dataDir);
      await lock.release();
      return signalled;
    } catch (err) {
      if (!(err instanceof DataDirLocked) || err.holder === undefined) throw err;
      if (signalled === undefined) {
        signalled = err.holder;
        process.kill(signalled, 'SIGTERM');
      }
      if (Date.now() > deadline) {
        throw new Error(`the server (pid ${signalled}) on ${dataDir} did not stop in time`, {
          cause: err,
        });
      }
      await sleep(200);
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    console.error('slipway: stop failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
