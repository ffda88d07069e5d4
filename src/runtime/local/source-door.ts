import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { WARMUP_KEY } from '../../agent/protocol.js';
import { isSourceKey } from '../../sources/keys.js';
import type { SourceStore } from '../../sources/source-store.js';
import { listenOnSocket, type SocketOwner } from './unix-listener.js';

export interface SourceDoor {
  /** The one key this sandbox may fetch, set just before its inject. */
  allow(key: string): void;
  close(): Promise<void>;
}

export interface SourceDoorOptions {
  path: string;
  token: string;
  store: SourceStore;
  /** Served as WARMUP_KEY: the agent's boot-time rehearsal of an inject. */
  warmup: Buffer;
  /** Owner of the socket file, so the sandbox's uid can connect and nobody else can. */
  owner?: SocketOwner;
  log: (msg: string, extra?: object) => void;
}

const PATH = /^\/internal\/sources\/([^/]+)\.tar\.gz$/;

/**
 * The host end of a sandbox's `sources.sock`: the spec's `/internal/sources/{key}.tar.gz`, served
 * from the SourceStore to that one sandbox. GET only, the sandbox's token checked in constant time,
 * and only the key of the inject in progress: a sandbox can read no other app's source, even
 * holding a valid key.
 */
export async function openSourceDoor(opts: SourceDoorOptions): Promise<SourceDoor> {
  const expected = digest(opts.token);
  let allowed: string | undefined;
  const server = http.createServer((req, res) => {
    const refuse = (status: number, message: string) => {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`${message}\n`);
    };
    if (req.method !== 'GET') return refuse(405, 'method not allowed');
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !timingSafeEqual(digest(bearer), expected)) {
      opts.log('source door: bad token', { path: opts.path });
      return refuse(401, 'unauthorized');
    }
    const key = PATH.exec(req.url ?? '')?.[1];
    if (key === WARMUP_KEY) {
      res.writeHead(200, {
        'content-type': 'application/gzip',
        'content-length': opts.warmup.length,
      });
      res.end(opts.warmup);
      return;
    }
    if (key === undefined || !isSourceKey(key) || key !== allowed) return refuse(404, 'not found');
    const size = opts.store.size(key);
    const stream = opts.store.open(key);
    if (!stream) return refuse(404, 'not found');
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/gzip' };
    if (size !== undefined) headers['content-length'] = size;
    res.writeHead(200, headers);
    stream.on('error', (err) => {
      opts.log('source door: read failed', { key, error: err.message });
      res.destroy(err);
    });
    stream.pipe(res);
  });
  server.on('clientError', (err, socket) => {
    opts.log('source door: client error', { error: err.message });
    socket.destroy();
  });
  const close = await listenOnSocket(server, opts.path, opts.owner);
  return { allow: (key) => (allowed = key), close };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
