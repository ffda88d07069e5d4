import type { Duplex } from 'node:stream';
import { INLINE_SOURCE_MAX } from '../agent/protocol.js';
import type { EnvItem } from '../persistence/store.js';

/**
 * The runtime interface (design.md §4): the app machine decides, the runtime does. Two backends
 * implement it: `local` (bubblewrap sandboxes on this machine, the default) and `kubernetes`.
 */
export interface Runtime {
  readonly backend: 'local' | 'kubernetes';
  /** Templates this runtime can run (`static`, `node`, `python` on local). */
  readonly templates: readonly string[];
  /** Boots the warm pools; resolves once the runtime can claim (pools may still be filling). */
  start(): Promise<void>;
  /** Reaps every sandbox, idle or claimed. */
  stop(): Promise<void>;
  /**
   * Takes a warm sandbox of the template out of its pool (booting one if the pool is empty).
   * Rejects with RuntimeError: `transient: true` for failures worth retrying.
   */
  claim(template: string, appId: string): Promise<Sandbox>;
  /**
   * Puts the source into the claimed sandbox and starts the app; resolves once the app answers on
   * its socket, with the stages inside the sandbox it could time (ms by stage, e.g. `unpack`,
   * `app-start`). Rejects with AppExitError if the app exits first, RuntimeError otherwise.
   * `upload`: the source as a deploy received it, which the store may still be writing.
   */
  inject(sandbox: Sandbox, spec: InjectSpec, upload?: Upload): Promise<InjectStages | void>;
  /** True while the app answers. */
  health(sandbox: Sandbox): Promise<boolean>;
  /** Stops the sandbox and removes its files; idempotent. */
  reap(sandbox: Sandbox): Promise<void>;
  /**
   * The sandboxes a previous control plane left serving, which start() verified and adopted,
   * each with the app and version it runs. Handed out once; the caller reaps what it does not
   * take. Runtimes whose sandboxes end with the process have none.
   */
  adopted?(): AdoptedSandbox[];
  /**
   * Drops what the runtime kept for an app beyond its sandboxes (the local runtime's built
   * trees), once the app is deleted: the next app of that name must not inherit any of it.
   */
  forget?(appId: string): void;
  /** Pool and host facts for /readyz and metrics. */
  status(): RuntimeStatus;
  /**
   * Why this runtime cannot run the lane for the template (e.g. no package index on the host), as
   * a message saying what the user can change; undefined when it can. Asked before any claim.
   */
  laneUnavailable(template: string, lane: Lane): string | undefined;
  /** The language runtimes apps get, by name (`node`, `python`), as `x.y.z`. */
  versions(): Record<string, string>;
}

/**
 * A deploy's source in hand (its head start, src/actors/head-starts.ts), while the store may
 * still be writing it: a source small enough to go with the inject goes as it is; whatever
 * reads the store (a pull, an install) waits for `stored` first.
 */
export interface Upload {
  source: Buffer;
  stored: Promise<void>;
}

/**
 * The upload's bytes when they may go with the inject as they are (`inline`, and small enough);
 * otherwise undefined, once the store has the source: what the sandbox gets from the store then
 * is there.
 */
export async function uploadInHand(
  upload: Upload | undefined,
  inline: boolean,
): Promise<Buffer | undefined> {
  if (inline && upload && upload.source.length <= INLINE_SOURCE_MAX) return upload.source;
  await upload?.stored;
  return undefined;
}

/** Where an inject spent its time inside the sandbox, in ms by stage. */
export type InjectStages = Record<string, number>;

export interface AdoptedSandbox {
  sandbox: Sandbox;
  appId: string;
  version: number;
}

/** `fast`: the source runs as shipped; `general`: an install (and build) step runs first. */
export type Lane = 'fast' | 'general';

export interface Sandbox {
  readonly id: string;
  readonly template: string;
  /** Opens a byte stream to the app (HTTP, websockets): the router proxies through it. */
  connect(): Duplex;
  /**
   * Where visitors can reach the app without the control plane (a pod's address), when the
   * runtime has such a place: the data path routes a Ready app's host there.
   */
  readonly address?: { host: string; port: number };
  /**
   * The same for a proxy on this host (the local native front door): a path to the app's socket
   * that only the host can write, made before any app code ran.
   */
  readonly socketPath?: string;
  /** Called once when the app (or the whole sandbox) exits after inject. */
  onExit(listener: (exit: AppExit) => void): void;
  /** Every line the app prints, as it prints it. */
  onLog(listener: (line: LogLine) => void): void;
  /**
   * Visitors reached the app without passing the control plane's router (Kubernetes: ingress →
   * pod), at most about once a second: idle suspend counts it as a request.
   */
  onActivity?(listener: () => void): void;
}

export interface InjectSpec {
  appId: string;
  /** The app's owner: a built tree is kept for this owner's app only (see `sourceHash`). */
  ownerId?: string;
  version: number;
  /** Blob key `<app_id>.v<version>.<32 hex>`; the agent pulls `/internal/sources/<key>.tar.gz`. */
  sourceKey: string;
  template: string;
  /** `general` runs the template's install step in the sandbox before the app starts. */
  lane: Lane;
  entrypoint?: string;
  /** runtime.build: run with `sh -c` in /app after the install, instead of `npm run build`. */
  build?: string;
  env: EnvItem[];
  /** `egress.allowed_hosts`; empty = no egress at all. */
  allowedHosts: string[];
  /**
   * The version's `sha256:<hex>` source hash. With it, the general lane keeps the built tree of
   * this release and a later start of it (wake, restart, rollback) unpacks that, not reinstalls.
   */
  sourceHash?: string;
}

export interface LogLine {
  /** ISO 8601 UTC. */
  time: string;
  /** `system`: Slipway's own note about the app (it starts with NOTE_PREFIX). */
  stream: 'stdout' | 'stderr' | 'system';
  text: string;
}

/** How Slipway's own lines in an app's log begin. */
export const NOTE_PREFIX = '[slipway] ';

export interface AppExit {
  code: number | null;
  signal: string | null;
  /** The app's last log lines (up to 20), for the Failed message. */
  lastLines: string[];
}

export interface RuntimeStatus {
  ok: boolean;
  backend: string;
  pools: Record<string, { idle: number; target: number; booting: number }>;
  claimed: number;
  /** Whether memory and pid limits are enforced, and why not when they are not. */
  limits: { enforced: boolean; detail: string };
  [extra: string]: unknown;
}

/**
 * A runtime failure; `transient` ones are retried by the app machine with backoff. `reason` is the
 * code the app shows when the failure has a more telling one than the phase's (`InstallFailed`).
 */
export class RuntimeError extends Error {
  override name = 'RuntimeError';
  constructor(
    message: string,
    readonly transient: boolean,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** The app process exited before it ever answered. */
export class AppExitError extends Error {
  override name = 'AppExitError';
  constructor(readonly exit: AppExit) {
    super(`app exited with ${exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`}`);
  }
}
