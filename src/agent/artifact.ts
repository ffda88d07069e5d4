import { createReadStream, lstatSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { APP_DIR, SOCKET_DIR, SOURCES_SOCK } from './protocol.js';

/**
 * Packs /app as the install and build left it (node_modules, dist/, site-packages) and PUTs it to
 * the host's door under `key`, the one artifact the host allowed: a wake or a rollback of the same
 * release then unpacks this instead of installing again. Resolves with the compressed size.
 */
export async function uploadArtifact(
  key: string,
  token: string,
  deadline: number,
): Promise<number> {
  const pack = tar.pack();
  const gzip = createGzip({ level: 1 });
  let bytes = 0;
  gzip.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const request = http.request({
    socketPath: `${SOCKET_DIR}/${SOURCES_SOCK}`,
    method: 'PUT',
    path: `/internal/artifacts/${key}.tar.gz`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/gzip' },
    timeout: Math.max(1_000, deadline - Date.now()),
  });
  request.on('timeout', () => request.destroy(new Error('artifact upload timed out')));
  const answered = new Promise<number>((resolve, reject) => {
    request.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    request.on('error', reject);
  });
  const sent = pipeline(pack, gzip, request);
  await addTree(pack, '');
  pack.finalize();
  await sent;
  const status = await answered;
  if (status !== 204) throw new Error(`the host refused the artifact (${status})`);
  return bytes;
}

/** Depth first, in name order: directories, regular files and symlinks; nothing else. */
async function addTree(pack: tar.Pack, rel: string): Promise<void> {
  for (const name of readdirSync(join(APP_DIR, rel)).sort()) {
    const path = rel === '' ? name : `${rel}/${name}`;
    const full = join(APP_DIR, path);
    const stat = lstatSync(full);
    const mode = stat.mode & 0o777;
    if (stat.isDirectory()) {
      pack.entry({ name: path, type: 'directory', mode });
      await addTree(pack, path);
    } else if (stat.isSymbolicLink()) {
      pack.entry({ name: path, type: 'symlink', linkname: readlinkSync(full), mode });
    } else if (stat.isFile()) {
      await new Promise<void>((resolve, reject) => {
        const entry = pack.entry({ name: path, type: 'file', size: stat.size, mode }, (err) =>
          err ? reject(err) : resolve(),
        );
        createReadStream(full).on('error', reject).pipe(entry);
      });
    }
  }
}

/** Empties /app (a tmpfs mount point, which itself stays) after a restore that went wrong. */
export function clearApp(): void {
  for (const name of readdirSync(APP_DIR))
    rmSync(join(APP_DIR, name), { recursive: true, force: true });
}
