import { createReadStream, createWriteStream, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { isArchiveEntry } from './layout.js';

/**
 * Unpacks a backup archive into `work` (0700 folders, 0600 files): only the regular files a backup
 * holds (`isArchiveEntry`), each written once. Returns the names of every other entry (links,
 * paths outside, files no backup has, a file named again), which are not written; the caller
 * refuses the archive.
 */
export async function unpackArchive(file: string, work: string): Promise<string[]> {
  const refused: string[] = [];
  const written = new Set<string>();
  const extract = tar.extract();
  extract.on('entry', (header, body, next) => {
    if (header.type !== 'file' || !isArchiveEntry(header.name) || written.has(header.name)) {
      refused.push(header.name);
      body.on('end', () => next()).resume();
      return;
    }
    written.add(header.name);
    const target = join(work, header.name);
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
    pipeline(body, createWriteStream(target, { flags: 'wx', mode: 0o600 })).then(
      () => next(),
      next,
    );
  });
  await pipeline(createReadStream(file), createGunzip(), extract);
  return refused;
}
