import { ConfigError, loadConfig } from './config/load.js';
import { StartCancelled, startSlipway, type Running } from './start.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Handlers first: a signal during start-up (the runtime preparing, apps coming back) must undo
  // the start and exit 0, not kill the process halfway with sandboxes and a runtime dir behind.
  const starting = new AbortController();
  let running: Running | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (!running) {
      starting.abort(signal);
      return;
    }
    if (stopping) {
      // A second signal: the operator will not wait for the drain; the orderly stop still runs.
      running.app.log.warn(`${signal} again: closing the requests still running`);
      running.hurry();
      return;
    }
    stopping = true;
    running.app.log.info(`${signal}: shutting down`);
    // Exit 0 even when the drain timed out and cut requests: the stop itself went as designed
    // (the cut is logged as a warning); 1 is for a stop that failed.
    running.close().then(
      () => {
        if (config.server.restartContinuity && config.runtime.backend === 'local') {
          console.error(
            'slipway: the apps and the front door keep serving for the next start; `npm run stop` ends them',
          );
        }
        process.exit(0);
      },
      (err: unknown) => {
        console.error('shutdown failed:', err);
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop(signal));
  try {
    running = await startSlipway(config, {
      logger: { level: config.server.logLevel },
      signal: starting.signal,
    });
  } catch (err) {
    if (err instanceof StartCancelled) process.exit(0);
    throw err;
  }
  running.app.log.info(`Slipway control plane on ${running.baseURL}`);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error('slipway: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
