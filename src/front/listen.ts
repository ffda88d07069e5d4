import { availableParallelism } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { durationMs, type Config } from '../config/schema.js';
import type { Drain } from '../http/drain.js';
import type { TlsMaterial } from '../http/tls.js';
import { logsAccess, type DataPath } from './data-path.js';
import { openFrontDoor, stopFrontDoor } from './front-door.js';
import type { Log } from '../logging.js';

/** Where visitors reach the server, and how they are let go of. */
export interface Visitors {
  port: number;
  /** A start that fails afterwards undoes the listening. */
  abandon(): Promise<void>;
  /** The clean stop, once the server is closed: a front door not meant to outlive it stops. */
  close(): Promise<void>;
}

/**
 * Where visitors connect, and the port they reach. The native data path: HAProxy's front door,
 * always; it outlives this process when restart continuity is on. Otherwise, with restart
 * continuity on the local runtime, through the relay front door, which outlives this process;
 * else straight to the server (a front door an earlier run left is stopped first: it holds the
 * address).
 */
export async function listenForVisitors(
  app: FastifyInstance,
  opts: {
    config: Config;
    host: string;
    port: number;
    drain: Drain;
    dataPath: DataPath;
    tls?: TlsMaterial;
  },
): Promise<Visitors> {
  const { config, host, port, drain, dataPath, tls } = opts;
  const dataDir = config.server.dataDir;
  const log: Log = (level, msg, extra) => app.log[level](extra ?? {}, msg);
  const continuity = config.server.restartContinuity && config.runtime.backend === 'local';
  if (!continuity && dataPath.kind !== 'native') {
    await stopFrontDoor(dataDir, log);
    await app.listen({ host, port });
    const address = app.server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    // The listener closes with the server.
    const done = () => Promise.resolve();
    return { port: bound, abandon: done, close: done };
  }
  await app.ready();
  const native =
    dataPath.kind === 'native'
      ? {
          haproxy: dataPath.haproxy,
          slots: config.server.nativeSlots,
          threads: proxyThreads(config.server.nativeThreads),
          headersTimeoutMs: durationMs(config.server.headersTimeout),
          ...(tls ? { tls } : {}),
          ...(logsAccess(config) ? { accessLog: true } : {}),
        }
      : undefined;
  const door = await openFrontDoor({
    dataDir,
    host,
    port,
    server: app.server,
    log,
    ...(native ? { native } : {}),
  });
  drain.acceptFrom(door);
  return {
    port: door.port,
    abandon: () => door.abandon(),
    close: () => (continuity ? Promise.resolve() : stopFrontDoor(dataDir, log)),
  };
}

/**
 * HAProxy's threads: `auto` is half the cores, at least one. A request costs HAProxy about what it
 * costs a small app, so the two get an equal share; on two cores a second proxy thread only takes
 * the app's core (0.50–0.52× of the app's own speed against 0.58–0.65×, docs/data-path.md).
 */
export function proxyThreads(setting: 'auto' | number, cores = availableParallelism()): number {
  return setting === 'auto' ? Math.max(1, Math.floor(cores / 2)) : setting;
}
