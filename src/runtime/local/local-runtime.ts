import { execFileSync } from 'node:child_process';
import type { Template } from '../../agent/protocol.js';
import type { SourceStore } from '../../sources/source-store.js';
import {
  RuntimeError,
  type InjectSpec,
  type Lane,
  type Runtime,
  type RuntimeStatus,
  type Sandbox,
} from '../runtime.js';
import { join } from 'node:path';
import { callAgent } from './agent-client.js';
import { openArtifactStore, type ArtifactLimits } from './artifact-store.js';
import { egressLimits, SharedCount, type EgressLimits } from '../egress/egress-limits.js';
import { prepareHost, readHostEnv, removeRuntimeDir, type HostSetup } from './host-setup.js';
import { injectInto } from './inject-call.js';
import { laneProblem } from './lanes.js';
import { readPackageHosts, shownUrl, type PackageHosts } from './package-hosts.js';
import { LocalSandbox } from './sandbox.js';
import { adoptLeftovers } from './adopt-leftovers.js';
import { bootSandbox, type FactoryOptions } from './sandbox-factory.js';
import type { UidRange } from './sandbox-users.js';
import { WarmPool } from './warm-pool.js';
import type { Log } from '../../logging.js';

export interface LocalRuntimeOptions {
  dataDir: string;
  sourceStore: SourceStore;
  agentToken: string;
  poolSize: number;
  startTimeoutMs: number;
  /** The general lane's install step, on top of startTimeoutMs; default 10 minutes. */
  installTimeoutMs?: number;
  /** The package indexes the general lane installs from; default: read from the host's npm/pip. */
  packageHosts?: PackageHosts;
  memoryLimitMB: number;
  pidsLimit: number;
  /** CPUs' worth of time per sandbox; default 1. */
  cpu?: number;
  /** `runtime.dir`: where this instance's runtime dir goes; a default under /run or the tmp dir. */
  runtimeDir?: string;
  /** Host uids for sandboxes when we are root; default 65,536 of them from 2,100,000,000. */
  uids?: UidRange;
  allowPrivate: string[];
  /** `runtime.egress` caps; defaults in egress-limits.ts. */
  egress?: { maxConnectionsPerSandbox?: number; maxConnections?: number; headTimeoutMs?: number };
  /** Runtime notes (boot failures are warnings). */
  log?: Log;
  /** Built trees kept under dataDir/artifacts: each at most maxBytes, all together totalBytes. */
  artifacts?: Partial<ArtifactLimits>;
  /**
   * Running apps' sandboxes outlive this process: stop() leaves them running, and the next
   * start() adopts them (server.restartContinuity). Default false: everything ends with us.
   */
  keepRunning?: boolean;
}

const DEFAULT_ARTIFACTS: ArtifactLimits = {
  maxBytes: 512 * 1024 * 1024,
  totalBytes: 4 * 1024 ** 3,
};
const DEFAULT_INSTALL_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_UIDS: UidRange = { first: 2_100_000_000, count: 65_536 };

export interface LocalRuntime extends Runtime {
  /** Resolves once no background pool boot is queued or running (tests, benchmarks). */
  settled(): Promise<void>;
}

/**
 * The embedded runtime (design.md §4): bubblewrap sandboxes on this machine, pre-booted in warm
 * pools, each running our agent, which loads the app in place when the source is injected.
 */
export function createLocalRuntime(opts: LocalRuntimeOptions): LocalRuntime {
  const log = opts.log ?? (() => undefined);
  const env = readHostEnv();
  const templates: Template[] = env.python ? ['static', 'node', 'python'] : ['static', 'node'];
  const memoryBytes = opts.memoryLimitMB * 1024 * 1024;
  const artifacts = openArtifactStore(join(opts.dataDir, 'artifacts'), {
    ...DEFAULT_ARTIFACTS,
    ...opts.artifacts,
  });
  let host: HostSetup | undefined;
  let packageHosts = opts.packageHosts;
  let readingHosts = packageHosts && Promise.resolve(packageHosts);
  // Read once; start() waits for it, so that laneUnavailable can answer for the first deploy.
  const readHosts = (): Promise<PackageHosts> =>
    (readingHosts ??= readPackageHosts(env.node, env.python, env.extraReadOnly).then((found) => {
      packageHosts = found;
      log('info', 'general lane', generalLane(found));
      return found;
    }));
  const egress: EgressLimits = egressLimits({
    perSandbox: opts.egress?.maxConnectionsPerSandbox,
    total: opts.egress?.maxConnections ? new SharedCount(opts.egress.maxConnections) : undefined,
    headTimeoutMs: opts.egress?.headTimeoutMs,
  });
  let state: 'new' | 'started' | 'stopped' = 'new';
  let pythonVersion: string | undefined;
  let starting: Promise<void> | undefined;
  const claimed = new Set<LocalSandbox>();
  let adopted: LocalSandbox[] = [];
  const factory: FactoryOptions = {
    agentToken: opts.agentToken,
    sourceStore: opts.sourceStore,
    artifacts,
    egress: { allowPrivate: opts.allowPrivate, limits: egress },
    tmpfsBytes: memoryBytes,
    log,
  };
  const pool = new WarmPool({
    templates,
    size: opts.poolSize,
    log,
    boot: (template) => {
      if (!host) throw new RuntimeError('the local runtime is not started', true);
      return bootSandbox(host, factory, template as Template);
    },
  });

  function hold(sandbox: LocalSandbox): void {
    claimed.add(sandbox);
    void sandbox.closed.then(() => claimed.delete(sandbox));
  }

  function ours(sandbox: Sandbox): LocalSandbox {
    if (sandbox instanceof LocalSandbox && claimed.has(sandbox)) return sandbox;
    throw new RuntimeError(`sandbox ${sandbox.id} is not a claimed sandbox of this runtime`, false);
  }

  return {
    backend: 'local',
    templates,

    start() {
      starting ??= (async () => {
        try {
          const hostOptions = {
            dataDir: opts.dataDir,
            runtimeDir: opts.runtimeDir,
            uids: opts.uids ?? DEFAULT_UIDS,
            limits: { memoryBytes, pids: opts.pidsLimit, cpu: opts.cpu ?? 1 },
            keep: opts.keepRunning ?? false,
          };
          // Asking npm and pip spawns both, a few hundred ms when quiet and seconds under load:
          // the sandboxes a restart left are taken back meanwhile, not after.
          const adopting = prepareHost(hostOptions, env, log).then(async (prepared) => {
            host = prepared;
            adopted = await adoptLeftovers(prepared, factory, hold, log);
            return prepared;
          });
          const [prepared] = await Promise.all([adopting, readHosts()]);
          log('info', `sandbox limits: ${prepared.cgroups.detail}`);
          log('info', `sandbox user: ${prepared.users.detail}`);
        } catch (err) {
          starting = undefined;
          throw err;
        }
        if (state === 'new') {
          state = 'started';
          pool.start();
        }
      })();
      return starting;
    },

    async stop() {
      state = 'stopped';
      await pool.stop();
      // Apps that run go on running for the next start to adopt; what was still starting goes.
      const keep = host?.keep === true;
      await Promise.all([...claimed].map((s) => (keep && s.runsApp ? s.release() : s.reap())));
      claimed.clear();
      adopted = [];
      if (host && !keep) {
        host.cgroups.dispose();
        await removeRuntimeDir(host);
      }
    },

    adopted() {
      const taken = adopted;
      adopted = [];
      return taken.flatMap((sandbox) => {
        const { appId, adoptedVersion } = sandbox;
        return appId !== undefined && adoptedVersion !== undefined && sandbox.alive
          ? [{ sandbox, appId, version: adoptedVersion }]
          : [];
      });
    },

    async claim(template, appId) {
      // Apps come back while the runtime is still starting: their claims wait for it.
      if (state === 'new' && starting) await starting;
      if (state !== 'started') throw new RuntimeError(`the local runtime is ${state}`, true);
      if (!(templates as string[]).includes(template)) {
        const have = templates.join(', ');
        throw new RuntimeError(
          `template ${JSON.stringify(template)} is not available on the local runtime (it has ${have})`,
          false,
        );
      }
      const sandbox = await pool.claim(template);
      if (state !== 'started') {
        // Stopped while this one booted: stop() did not see it, so it is ours to reap.
        await sandbox.reap();
        throw new RuntimeError(`the local runtime is ${state}`, true);
      }
      sandbox.phase = 'claimed';
      sandbox.appId = appId;
      hold(sandbox);
      return sandbox;
    },

    inject(sandbox, spec: InjectSpec, upload) {
      const local = ours(sandbox);
      const deps = {
        startTimeoutMs: opts.startTimeoutMs,
        installTimeoutMs: opts.installTimeoutMs ?? DEFAULT_INSTALL_TIMEOUT_MS,
        allowPrivate: opts.allowPrivate,
        packageHosts: readHosts,
        artifacts,
        sources: opts.sourceStore,
        log,
      };
      return injectInto(local, spec, deps, upload).finally(() => pool.injected(local.template));
    },

    async health(sandbox) {
      if (!(sandbox instanceof LocalSandbox) || !sandbox.alive || sandbox.phase !== 'running') {
        return false;
      }
      try {
        const reply = await callAgent(sandbox.agentPath, sandbox.token, 'GET', '/health', {
          timeoutMs: 2_000,
          link: sandbox.link,
        });
        return reply.status === 200;
      } catch (err) {
        log('info', 'health check failed', { sandbox: sandbox.id, error: String(err) });
        return false;
      }
    },

    async reap(sandbox) {
      if (!(sandbox instanceof LocalSandbox)) return;
      await sandbox.reap();
      claimed.delete(sandbox);
    },

    forget(appId) {
      try {
        artifacts.removeApp(appId);
      } catch (err) {
        // The app is gone either way; a tree left behind is keyed to its owner, never handed on.
        log('info', 'could not remove the built trees of a deleted app', {
          app: appId,
          err: String(err),
        });
      }
    },

    status(): RuntimeStatus {
      return {
        ok: state === 'started' && pool.lastError === undefined,
        backend: 'local',
        pools: pool.status(),
        claimed: claimed.size,
        limits: {
          enforced: host?.cgroups.enforced ?? false,
          detail: host?.cgroups.detail ?? `not started (${state})`,
        },
        sandboxUser: host?.users.detail ?? 'not started',
        generalLane: packageHosts
          ? generalLane(packageHosts)
          : 'reading the host npm and pip config',
        ...(pool.lastError ? { lastBootError: pool.lastError } : {}),
      };
    },

    laneUnavailable(template: string, lane: Lane) {
      // Before start nothing is known; inject fails clearly should it come to that.
      return packageHosts && laneProblem(template, lane, packageHosts);
    },

    versions() {
      pythonVersion ??= env.python ? versionOf(env.python, log) : '';
      const out: Record<string, string> = { node: process.versions.node };
      if (pythonVersion) out.python = pythonVersion;
      return out;
    },

    settled: () => pool.settled(),
  };
}

/** Where each template's general lane installs from, or why it has none (logs, /readyz). */
function generalLane(hosts: PackageHosts): { node: string; python: string } {
  return {
    node: hosts.npm ? shownUrl(hosts.npm.registry) : `unavailable: ${hosts.missing.npm}`,
    python: hosts.pip ? shownUrl(hosts.pip.index) : `unavailable: ${hosts.missing.pip}`,
  };
}

/** `x.y.z` from `python3 --version` (asked once, when first wanted); '' if it will not say. */
function versionOf(python: string, log: NonNullable<LocalRuntimeOptions['log']>): string {
  try {
    const out = execFileSync(python, ['--version'], { encoding: 'utf8', timeout: 5_000 });
    return /(\d+\.\d+\.\d+)/.exec(out)?.[1] ?? '';
  } catch (err) {
    // Listed without a version rather than not at all: whether the template runs is apart.
    log('warn', 'python3 --version failed', {
      err: err instanceof Error ? err.message : String(err),
    });
    return '';
  }
}
