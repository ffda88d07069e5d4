/**
 * The contract between the control plane and the in-sandbox agent (design.md §4). Types only, plus
 * the fixed names both sides agree on; the host imports this file, the agent is bundled with it.
 *
 * Boot: the host spawns the sandbox and writes one JSON line, a BootMessage, to the agent's stdin
 * (the token never travels in env or argv). The agent answers `{"t":"ready"}` on its diagnostics
 * fd once `agent.sock` listens and the template's runtime is warm.
 * Inject: one `POST /inject` on `agent.sock`; the agent pulls the source through `sources.sock`,
 * unpacks it, starts the app and answers once the app accepts connections (or exits, or times out).
 * The general lane's `POST /install` comes first (see InstallRequest).
 */

/** Where the per-sandbox socket directory appears inside the sandbox. */
export const SOCKET_DIR = '/run/slipway';
export const AGENT_SOCK = 'agent.sock';
export const APP_SOCK = 'app.sock';
export const SOURCES_SOCK = 'sources.sock';
export const EGRESS_SOCK = 'egress.sock';
/** The app's private writable tree. */
export const APP_DIR = '/app';

/** The largest request body the agent's control API reads. */
export const CONTROL_MAX_BODY = 1024 * 1024;

/**
 * The largest source that rides in its inject request (InjectRequest.source), when the request
 * still fits CONTROL_MAX_BODY with it.
 */
export const INLINE_SOURCE_MAX = 256 * 1024;
/** Every app listens here: each sandbox has its own network namespace, so they never collide. */
export const APP_PORT = 8080;
/** The in-sandbox HTTP proxy that relays to `egress.sock`. */
export const PROXY_PORT = 3128;
/**
 * bwrap reads its NUL-separated argv from this fd, so the sandbox's pid 1 shows no host paths. It
 * closes the fd once read: inside the sandbox the number is node's own (its event loop's epoll),
 * which the agent once closed as a leftover, and node 22+ then aborted in libuv when the app exited.
 */
export const ARGS_FD = 3;
/** JSON lines from the agent about itself: never mixed with the app's stdout/stderr (fds 1, 2). */
export const DIAG_FD = 4;

export type Template = 'static' | 'node' | 'python';

export interface BootMessage {
  /** This sandbox's own token (derived on the host; the shared agent token never enters). */
  token: string;
  sandboxId: string;
  template: Template;
  /** Interpreter to pre-start for the python template. */
  python?: string;
}

export interface InjectRequest {
  sourceKey: string;
  /** Pull the source from here (a pre-signed object-store URL) instead of the source door. */
  sourceUrl?: string;
  /**
   * The gzipped tarball itself, base64, when it is at most INLINE_SOURCE_MAX bytes: unpacked
   * from here, with no pull through the door (one round trip less).
   */
  source?: string;
  /** Relative to /app; a default is looked for when absent. */
  entrypoint?: string;
  env: { name: string; value: string }[];
  startTimeoutMs: number;
}

/** The request with the source in it, unless there is none or the agent would not read that much. */
export function withInlineSource(
  request: InjectRequest,
  source: Buffer | undefined,
): InjectRequest {
  if (!source) return request;
  const text = source.toString('base64');
  const bytes = Buffer.byteLength(JSON.stringify(request)) + text.length + '"source":"",'.length;
  return bytes <= CONTROL_MAX_BODY ? { ...request, source: text } : request;
}

/**
 * General lane: `POST /install` comes before `POST /inject` (same sourceKey). The agent pulls and
 * unpacks the source, runs the template's install step in /app, and answers; the inject then
 * starts the app from what is already there. Two calls, so the host can narrow the egress rules
 * back to the app's own between the install and the app's first line of code.
 */
export interface InstallRequest {
  sourceKey: string;
  /** As InjectRequest.sourceUrl. */
  sourceUrl?: string;
  /** The deploy's env items: a build step may read them (API URLs baked into a bundle). */
  env: { name: string; value: string }[];
  timeoutMs: number;
  /** runtime.build: run with `sh -c` in /app after the install, instead of `npm run build`. */
  build?: string;
  /** The node template's install: the host's npm, registry and CA. */
  npm?: NpmInstall;
  /** The python template's install: the host's package index and CA. */
  pip?: PipInstall;
  /**
   * The release's built tree on the host (`/internal/artifacts/<key>.tar.gz`). `restore`: unpack it
   * instead of pulling the source and installing (410 when it cannot be used: /app is empty again
   * and the sandbox idle, ready for a real install). Else: after the install, pack /app and PUT it.
   */
  artifact?: { key: string; restore: boolean };
}

/** CA bundle for TLS to the index: a path the sandbox sees, or its contents to write out. */
export interface CaBundle {
  cafile?: string;
  ca?: string;
}

export interface NpmInstall extends CaBundle {
  /** npm-cli.js of the host's node, on a read-only bind at the same path. */
  cli: string;
  registry: string;
  /** `@scope:registry` keys of the host's npm config. */
  scoped: Record<string, string>;
}

export interface PipInstall extends CaBundle {
  /** The index URL (`--index-url`). */
  index: string;
  /** Where the index's pages link the files, when on other hosts (PyPI: files.pythonhosted.org). */
  files?: string[];
}

/** Where the python general lane installs to; on the app's sys.path and PYTHONPATH. */
export const PIP_TARGET = '/app/.slipway/site-packages';

/** A step of the install that failed or ran out of time, with its own last output lines. */
export interface InstallFailure {
  /** As the user would type it: `npm ci`, `npm run build`, `pip install`. */
  command: string;
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  lastLines: string[];
}

/**
 * 200: installed; 424: a step failed (InstallFailure); 400: the source is unusable; 410: the
 * artifact to restore is unusable; 5xx: other.
 */
export type InstallResponse =
  | {
      ok: true;
      ms: { pull: number; install: number; artifact?: number };
      steps: string[];
      artifact?: 'restored' | 'stored' | 'not stored';
    }
  | { ok: false; install: InstallFailure }
  | { ok: false; error: string };

export interface ExitReport {
  code: number | null;
  signal: string | null;
  lastLines: string[];
}

/** 200: started; 422: the app exited first; 400: the source or entrypoint is unusable; 5xx: other. */
export type InjectResponse =
  | { ok: true; ms: { pull: number; start: number; total: number } }
  | { ok: false; exit: ExitReport }
  | { ok: false; error: string };

export type Diag =
  | { t: 'ready'; ms: number }
  | ({ t: 'exit' } & ExitReport)
  | { t: 'log'; level: 'info' | 'warn' | 'error'; msg: string; extra?: Record<string, unknown> };

/**
 * The key of a tiny tarball every source door serves: the agent pulls and loads it at boot, so the
 * code paths of the real inject (HTTP client, gunzip, tar, module loaders) are warm before it.
 */
export const WARMUP_KEY = '_warmup';
export const WARMUP_DIR = '/tmp/.slipway-warmup';

/** Lines the agent keeps (design.md §6) and how many an exit report carries. */
export const RING_LINES = 1000;
export const EXIT_LINES = 20;
