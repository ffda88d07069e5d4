import { ConfigError, loadConfig } from './config/load.js';
import { startSlipway } from './start.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const running = await startSlipway(config, { logger: { level: config.server.logLevel } });
  running.app.log.info(`Slipway control plane on ${running.baseURL}`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      running.app.log.info(`${signal}: shutting down`);
      running.close().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error('shutdown failed:', err);
          process.exit(1);
        },
      );
    });
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error('slipway: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
