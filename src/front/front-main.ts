/**
 * The front door (design.md §10): a small process of its own that holds the public listening
 * address and relays every connection to the control plane's unix socket. It outlives the
 * control plane, so a restart, a crash or an upgrade of the control plane never closes the
 * address: visitors are held while none listens, then served by the next one.
 *
 * Started by the control plane (front-door.ts) with its settings in SLIPWAY_FRONT; says
 * `listening <port>` on stdout once it accepts, then nothing more there.
 */
import net from 'node:net';
import { rmSync } from 'node:fs';
import { relay, relayProxied } from './relay.js';
import { readFrontSettings } from './front-settings.js';
import type { Log } from '../logging.js';

const settings = readFrontSettings(process.env.SLIPWAY_FRONT);
const log: Log = (level, msg, extra) => {
  const line = { time: new Date().toISOString(), level, msg, ...extra };
  process.stderr.write(`${JSON.stringify(line)}\n`);
};
const relayOptions = {
  socketPath: settings.socket,
  holdMs: settings.holdMs,
  idleMs: settings.idleMs,
  log,
};
const behindProxy = settings.listenPath !== undefined;
const server = net.createServer({ pauseOnConnect: !behindProxy }, (client) =>
  behindProxy ? relayProxied(client, relayOptions) : relay(client, relayOptions),
);
server.on('error', (err) => {
  log('error', 'front door listener failed', { error: err.message });
  process.exit(1);
});
if (settings.listenPath !== undefined) rmSync(settings.listenPath, { force: true });
const where = settings.listenPath ?? { host: settings.host, port: settings.port };
server.listen(where, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  process.stdout.write(`listening ${port}\n`);
  log('info', 'front door listening', { host: settings.host, port, socket: settings.socket });
});
const stop = (signal: string): void => {
  log('info', `${signal}: the front door stops`);
  server.close();
  process.exit(0);
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
// Its stdout is a pipe to the control plane that started it, gone once that one is: never fatal.
process.stdout.on('error', () => undefined);
