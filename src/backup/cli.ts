import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config/load.js';
import { databasePath } from '../persistence/open-store.js';
import { createBackup } from './create-backup.js';
import { restoreBackup } from './restore-backup.js';

const USAGE = [
  'usage: npm run backup -- <archive>            (while the server runs)',
  '       npm run restore -- <archive> [--force] (server stopped; into an empty data dir)',
].join('\n');

/**
 * `npm run backup` and `npm run restore`: the data dir and the database are found as `npm start`
 * finds them (SVC_CONFIG and SVC_* variables).
 */
async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const force = rest.includes('--force');
  const files = rest.filter((arg) => arg !== '--force');
  if ((command !== 'backup' && command !== 'restore') || files.length !== 1) {
    throw new ConfigError(USAGE);
  }
  const file = resolve(files[0] ?? '');
  const config = loadConfig();
  if (config.store.backend !== 'sqlite') {
    throw new ConfigError(
      `store.backend is ${config.store.backend}: backup and restore cover the sqlite backend only`,
    );
  }
  const { dataDir } = config.server;
  const database = databasePath({ path: config.store.path, dataDir });
  if (command === 'backup') {
    const made = await createBackup({
      databasePath: database,
      dataDir,
      sourcesBackend: config.sources.backend,
      file,
    });
    console.log(
      `slipway: backed up ${database} with ${made.sources} source blob(s) and ${made.artifacts} ` +
        `artifact(s) to ${file} (mode 0600: it holds apps' env values)`,
    );
    if (made.sourcesBackend === 's3') {
      console.log(
        'slipway: sources.backend is s3: the blobs stay in the bucket, not in the archive',
      );
    }
    if (made.missingSources.length > 0) {
      console.warn(
        `slipway: ${made.missingSources.length} source blob(s) the database points to were already missing: ${made.missingSources.join(', ')}`,
      );
    }
    return;
  }
  const restored = await restoreBackup({ file, dataDir, databasePath: database, force });
  console.log(
    `slipway: restored the backup of ${restored.createdAt} into ${dataDir}: the database, ` +
      `${restored.sources} source blob(s) and ${restored.artifacts} artifact(s); start the server`,
  );
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(
    `slipway: ${process.argv[2] ?? 'backup'} failed: ${err instanceof Error ? err.message : String(err)}`,
  );
  process.exit(err instanceof ConfigError ? 2 : 1);
});
