import { APP_PORT, DIAG_FD, PROXY_PORT } from './protocol.js';

/**
 * Where the app listens and where its egress goes. In a bwrap sandbox (its own network namespace)
 * these are the fixed protocol values; in a Kubernetes pod the pod entry point sets them before
 * anything else runs, since there the agent itself answers on the pod's app port.
 */
export const placement = {
  /** The port in the app's $PORT, where the bridge dials it. */
  appPort: APP_PORT,
  /** The agent's relay to the egress gate on 127.0.0.1: the app's HTTP(S)_PROXY. */
  proxyPort: PROXY_PORT,
  /** What a source pulled by URL goes through (a pod's relay to the egress gate); none: direct. */
  sourceProxy: undefined as { host: string; port: number } | undefined,
  /** Where the agent's own JSON lines go: the host's diagnostics pipe, or a pod's stderr. */
  diagFd: DIAG_FD,
};
