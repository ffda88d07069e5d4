import type { Config } from '../config/schema.js';
import { ConfigError } from '../config/load.js';
import { findHaproxy } from './haproxy/haproxy-process.js';

/** Which data path carries visitors to Ready public apps, and why (the admin `/readyz` says). */
export type DataPath = { kind: 'native'; haproxy: string } | { kind: 'node'; why: string };

/**
 * `server.dataPath` resolved on this host: `auto` takes the native front door when it can, and
 * says why not otherwise; `native` asked for where it cannot be is a configuration error.
 */
export function chooseDataPath(config: Config, find = findHaproxy): DataPath {
  const asked = config.server.dataPath;
  if (asked === 'node') return { kind: 'node', why: 'server.dataPath is node' };
  const refuse = (why: string): DataPath => {
    if (asked === 'native') throw new ConfigError(`config: server.dataPath is native, but ${why}`);
    return { kind: 'node', why };
  };
  if (config.runtime.backend !== 'local') {
    return refuse('the runtime is not local (a cluster routes its apps itself)');
  }
  const haproxy = find();
  if (haproxy === undefined) return refuse('haproxy is not installed (apt-get install haproxy)');
  return { kind: 'native', haproxy };
}

/** Whether visitors' requests are logged one by one: only at debug (and trace), on either path. */
export const logsAccess = (config: Config): boolean =>
  config.server.logLevel === 'debug' || config.server.logLevel === 'trace';
