import { createReadStream, lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar, { type Pack } from 'tar-stream';

/**
 * A gzipped tarball of `paths` (relative to `root`, in the order given; a directory is not walked),
 * read as it is made. Files and symbolic links only, named as given, with their permission bits
 * and mtime and nothing host-specific (owner, group, device, inode). Anything else is an error:
 * a source or a backup holds no devices, sockets or pipes.
 */
export function packPaths(root: string, paths: readonly string[]): Readable {
  const pack = tar.pack();
  const gzip = createGzip();
  // pipeline destroys gzip with any error of the packing, so whoever reads it sees that error.
  pipeline(pack, gzip).catch((err: unknown) => gzip.destroy(err as Error));
  void addAll(pack, root, paths).catch((err: unknown) => pack.destroy(err as Error));
  return gzip;
}

async function addAll(pack: Pack, root: string, paths: readonly string[]): Promise<void> {
  for (const name of paths) {
    const full = join(root, name);
    const stat = lstatSync(full);
    const header = { name, mode: stat.mode & 0o777, mtime: stat.mtime };
    if (stat.isSymbolicLink()) {
      await entry(pack, { ...header, type: 'symlink', linkname: readlinkSync(full) });
    } else if (stat.isFile()) {
      const body = pack.entry({ ...header, type: 'file', size: stat.size });
      await pipeline(createReadStream(full), body);
    } else {
      throw new Error(`${name}: not a file or a symbolic link`);
    }
  }
  pack.finalize();
}

function entry(pack: Pack, header: Parameters<Pack['entry']>[0]): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (err) => (err ? reject(err) : resolve()));
  });
}
