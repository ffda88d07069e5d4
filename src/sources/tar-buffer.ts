import { gunzipSync } from 'node:zlib';
import type { Extract } from 'tar-stream';

/**
 * A typical source is a few KB: inflated in one synchronous call and handed to the extract whole,
 * it skips a zlib stream's thread-pool hop per chunk and a stream pipeline, most of a
 * millisecond. `inflateSmall` returns undefined when the bytes are not a gzip stream that
 * inflates to at most `max` bytes; the caller's streaming pass then finds out what is wrong.
 */
export function inflateSmall(gzipped: Buffer, max: number): Buffer | undefined {
  try {
    return gunzipSync(gzipped, { maxOutputLength: max });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || code?.startsWith('Z_')) return undefined;
    throw err;
  }
}

/** Feeds a whole uncompressed tar to `extract`; resolves once every entry was handled. */
export function extractBuffer(extract: Extract, tar: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    extract.once('error', reject);
    extract.once('finish', () => resolve());
    extract.end(tar);
  });
}
