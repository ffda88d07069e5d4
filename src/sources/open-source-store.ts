import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import { durationMs, type Config } from '../config/schema.js';
import { createDiskSourceStore } from './disk-source-store.js';
import type { SourceStore } from './source-store.js';

/**
 * The source store `sources.backend` names: `served` under `<dataDir>/sources`, or `s3` in the
 * configured bucket (which must exist; Slipway does not create it). The AWS SDK is loaded only
 * for `s3`: the default start does without it.
 */
export async function openSourceStore(config: Config): Promise<SourceStore> {
  const { backend, s3 } = config.sources;
  if (backend === 'served') return createDiskSourceStore(join(config.server.dataDir, 'sources'));
  if (s3.bucket === undefined) {
    // The schema refuses this already; a caller that built the config by hand is told the same.
    throw new ConfigError('config: sources.s3.bucket: is required when sources.backend is "s3"');
  }
  const { createS3SourceStore } = await import('./s3-source-store.js');
  return createS3SourceStore({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    prefix: s3.prefix,
    forcePathStyle: s3.forcePathStyle,
    presignExpiryMs: durationMs(s3.presignExpiry),
    timeoutMs: durationMs(s3.timeout),
  });
}
