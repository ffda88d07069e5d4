import { packPaths } from '../io/pack-paths.js';

/** The server's cap on a source tarball (spec §8): refused here before a long upload. */
export const MAX_SOURCE_BYTES = 50 * 1024 * 1024;

/**
 * A gzipped tarball of `files` (relative to `root`), held in memory: the upload needs its length
 * up front for the progress bar and Content-Length, and the server takes 50 MB at most anyway.
 */
export async function packFiles(root: string, files: string[]): Promise<Buffer> {
  const stream = packPaths(root, files);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = Buffer.from(chunk as Uint8Array);
    size += buf.length;
    // Stop reading a tree far over the cap instead of holding all of it in memory.
    if (size > MAX_SOURCE_BYTES) return Buffer.concat([...chunks, buf]);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
