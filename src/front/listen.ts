import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';
import type { Drain } from '../http/drain.js';
import { openFrontDoor, stopFrontDoor } from './front-door.js';

/** Where visitors reach the server, and how a start that fails afterwards lets that go. */
export interface Visitors {
  port: number;
  abandon(): Promise<void>;
}

/**
 * Where visitors connect, and the port they reach. With restart continuity on the local runtime,
 * through the front door, which outlives this process; otherwise straight to the server (a front
 * door an earlier run left is stopped first: it holds the address).
 */
export async function listenForVisitors(
  app: FastifyInstance,
  opts: { config: Config; host: string; port: number; drain: Drain },
): Promise<Visitors> {
  const { config, host, port, drain } = opts;
  const dataDir = config.server.dataDir;
  const log = (level: 'info' | 'warn', msg: string, extra?: object): void =>
    app.log[level](extra ?? {}, msg);
  if (!config.server.restartContinuity || config.runtime.backend !== 'local') {
    await stopFrontDoor(dataDir, log);
    await app.listen({ host, port });
    const address = app.server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    // The listener closes with the server.
    return { port: bound, abandon: () => Promise.resolve() };
  }
  await app.ready();
  const door = await openFrontDoor({ dataDir, host, port, server: app.server, log });
  drain.acceptFrom(door);
  return { port: door.port, abandon: () => door.abandon() };
}
