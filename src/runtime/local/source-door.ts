import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { WARMUP_KEY } from '../../agent/protocol.js';
import { isSourceKey } from '../../sources/keys.js';
import type { SourceStore } from '../../sources/source-store.js';
import type { ArtifactStore } from './artifact-store.js';
import { listenOnSocket, type SocketOwner } from './unix-listener.js';
import type { Log } from '../../logging.js';

/** The one artifact a sandbox may fetch (a restore) or upload once (after its install). */
export interface ArtifactGrant {
  key: string;
  mode: 'get' | 'put';
}

export interface SourceDoor {
  /** The one key this sandbox may fetch, set just before its inject, and its artifact grant. */
  allow(key: string, artifact?: ArtifactGrant): void;
  close(): Promise<void>;
}

export interface SourceDoorOptions {
  path: string;
  token: string;
  store: SourceStore;
  /** Served as WARMUP_KEY: the agent's boot-time rehearsal of an inject. */
  warmup: Buffer;
  /** Where built trees are kept; without it, artifact requests are 404. */
  artifacts?: ArtifactStore;
  /** Owner of the socket file, so the sandbox's uid can connect and nobody else can. */
  owner?: SocketOwner;
  log: Log;
}

const PATH = /^\/internal\/sources\/([^/]+)\.tar\.gz$/;
const ARTIFACT_PATH = /^\/internal\/artifacts\/([^/]+)\.tar\.gz$/;

/**
 * The host end of a sandbox's `sources.sock`: the spec's `/internal/sources/{key}.tar.gz`, served
 * from the SourceStore to that one sandbox. GET only, the sandbox's token checked in constant time,
 * and only the key of the inject in progress: a sandbox can read no other app's source, even
 * holding a valid key.
 */
export async function openSourceDoor(opts: SourceDoorOptions): Promise<SourceDoor> {
  const expected = digest(opts.token);
  let allowed: string | undefined;
  let grant: ArtifactGrant | undefined;
  const server = http.createServer((req, res) => {
    const refuse = (status: number, message: string) => {
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`${message}\n`);
    };
    const artifact = ARTIFACT_PATH.exec(req.url ?? '')?.[1];
    const method = artifact !== undefined && grant?.mode === 'put' ? 'PUT' : 'GET';
    if (req.method !== method) {
      req.resume();
      return refuse(405, 'method not allowed');
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !timingSafeEqual(digest(bearer), expected)) {
      opts.log('info', 'source door: bad token', { path: opts.path });
      req.resume();
      return refuse(401, 'unauthorized');
    }
    if (artifact !== undefined) {
      if (!opts.artifacts || !grant || artifact !== grant.key) {
        req.resume();
        return refuse(404, 'not found');
      }
      return serveArtifact(opts.artifacts, grant, req, res, opts.log, () => (grant = undefined));
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
    serveSource(opts.store, key, res, opts.log).catch((err: unknown) => {
      // The store could not be read (an object store down): the agent's inject fails and says so.
      opts.log('info', 'source door: read failed', { key, error: String(err) });
      if (res.headersSent) res.destroy();
      else refuse(503, 'source store unavailable');
    });
  });
  server.on('clientError', (err, socket) => {
    opts.log('info', 'source door: client error', { error: err.message });
    socket.destroy();
  });
  const close = await listenOnSocket(server, opts.path, opts.owner);
  return {
    allow: (key, artifact) => {
      allowed = key;
      grant = artifact;
    },
    close,
  };
}

async function serveSource(
  store: SourceStore,
  key: string,
  res: http.ServerResponse,
  log: Log,
): Promise<void> {
  const size = await store.size(key);
  const stream = await store.open(key);
  if (!stream) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/gzip' };
  if (size !== undefined) headers['content-length'] = size;
  res.writeHead(200, headers);
  stream.on('error', (err) => {
    log('info', 'source door: read failed', { key, error: err.message });
    res.destroy(err);
  });
  // The sandbox hung up: stop reading the blob (an object store's body holds a connection).
  res.on('close', () => stream.destroy());
  stream.pipe(res);
}

/**
 * GET streams the granted artifact out; PUT streams the sandbox's upload into the store, capped
 * there, and spends the grant: one upload per install, whatever it held.
 */
function serveArtifact(
  store: ArtifactStore,
  grant: ArtifactGrant,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  log: Log,
  spend: () => void,
): void {
  if (grant.mode === 'put') {
    spend();
    store.write(grant.key, req).then(
      () => res.writeHead(204).end(),
      (err: unknown) => {
        log('info', 'source door: artifact upload refused', { error: String(err) });
        req.resume();
        res.writeHead(413, { 'content-type': 'text/plain', connection: 'close' }).end('refused\n');
      },
    );
    return;
  }
  const found = store.open(grant.key);
  if (!found) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': found.size });
  found.stream.on('error', (err) => {
    log('info', 'source door: artifact read failed', { error: err.message });
    res.destroy(err);
  });
  found.stream.pipe(res);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
