import { join } from 'node:path';
import { AppRegistry } from '../actors/registry.js';
import { CommitGate } from '../commit-gate.js';
import { durationMs, type Config } from '../config/schema.js';
import type { Log } from '../logging.js';
import { PublicUrls } from './public-urls.js';
import { guardStore } from '../persistence/guarded-store.js';
import { databaseProbe, StorageHealth } from '../persistence/storage-health.js';
import type { Store } from '../persistence/store.js';
import { WriteRetry } from '../persistence/write-retry.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SourceStore } from '../sources/source-store.js';
import { AppGrants } from './app-grants.js';
import { AppService } from './app-service.js';
import { AuditTrail } from './audit-trail.js';
import { BlobQuarantine } from './blob-quarantine.js';
import { DirectRoutes, type RoutePublisher } from './direct-routes.js';
import { OrphanBlobSweeper } from './orphan-blobs.js';
import { platformInfo, type PlatformInfo } from './platform-info.js';
import { ShareService } from './share-links.js';

/** The deploy side of Slipway, wired once per server: source store, runtime, actors, services. */
export interface DeployServices {
  /** The store as services write it: storage faults become 503s and mark `storage` down. */
  store: Store;
  /** Whether the database and the source store can write (readiness, refusals). */
  storage: StorageHealth;
  urls: PublicUrls;
  sourceStore: SourceStore;
  runtime: Runtime;
  registry: AppRegistry;
  /** Which requests' changes are owed an answer, and when none may commit any more (a drain). */
  commits: CommitGate;
  apps: AppService;
  /** Share links, for the HTTP routes and the MCP tools alike. */
  shares: ShareService;
  /** The grants share links hand out, which open private apps' hosts (the access gate). */
  grants: AppGrants;
  /** The one shared token of the in-sandbox agents (spec §4 /internal/sources); never logged. */
  agentToken: string;
  /** What this installation can run (`GET /v1/templates`, MCP `get_platform_info`). */
  platform(): PlatformInfo;
  /** Once the listener is up: the base URL is known, the pools boot, the apps come back. */
  start(baseURL: string): Promise<void>;
  stop(): Promise<void>;
  runtimeReadiness(): { ok: boolean; [detail: string]: unknown };
}

/** What the composition root opened for the deploy side: where sources live, what runs apps. */
export interface DeployParts {
  sourceStore: SourceStore;
  runtime: Runtime;
  agentToken: string;
  /** Direct routes to Ready apps' sandboxes (Kubernetes), when the runtime has them. */
  routes?: RoutePublisher;
  /** The routes stay when this process stops: the sandboxes they name outlive it. */
  keepRoutes?: boolean;
}

/** Builds the services over the parts start.ts chose; nothing starts until `start`. */
export function createDeployServices(
  config: Config,
  rawStore: Store,
  parts: DeployParts,
  log: Log,
): DeployServices {
  const { sourceStore, runtime, agentToken } = parts;
  const urls = new PublicUrls(config.server.appsDomain);
  const storage = new StorageHealth({
    probes: {
      database: databaseProbe(rawStore),
      'source store': () => sourceStore.probe(),
    },
    log,
  });
  // Every service writes through the guard: a full or read-only disk is a 503, not a 500.
  const store = guardStore(rawStore, storage);
  const writes = new WriteRetry({ log, health: storage });
  const registry = new AppRegistry({
    store,
    runtime,
    sourceStore,
    appUrl: (name) => urls.appUrl(name),
    log,
    policy: { stabilityWindowMs: durationMs(config.releases.stabilityWindow) },
    keepRetired: {
      keepMs: durationMs(config.runtime.keepPrevious),
      max: config.runtime.keepPreviousMax,
    },
    writes,
    restoreConcurrency: config.runtime.restoreConcurrency,
  });
  // The listener comes up before the apps are back: their visitors wait for them, not a 503.
  registry.holdRoutesUntilStarted();
  const audit = new AuditTrail(store, log, undefined, writes);
  // Idle suspends and wakes on request: the system acts, and the trail says so.
  audit.follow(registry);
  const direct =
    parts.routes && new DirectRoutes(store, registry, urls, parts.routes, log, parts.keepRoutes);
  const commits = new CommitGate();
  const apps = new AppService({
    store,
    commits,
    sourceStore,
    registry,
    config,
    log,
    audit,
    storage,
    ...(direct ? { accessGate: direct } : {}),
  });
  const grants = new AppGrants(store, { log });
  const shares = new ShareService({
    store,
    apps,
    grants,
    // server.baseURL when set; else the running base URL, known once the listener is up.
    baseURL: () => config.server.baseURL ?? urls.baseURL,
  });
  const quarantine = new BlobQuarantine(
    join(config.server.dataDir, 'quarantine'),
    durationMs(config.sources.quarantineRetention),
  );
  const orphans = new OrphanBlobSweeper({ store, sourceStore, log, quarantine });
  let started = false;
  return {
    store,
    storage,
    urls,
    sourceStore,
    runtime,
    registry,
    commits,
    apps,
    shares,
    grants,
    agentToken,
    platform: () => platformInfo(runtime, config, urls),
    async start(baseURL) {
      urls.setBase(baseURL);
      // The runtime first (it adopts what the last process left running), then the apps, on
      // those sandboxes where they still run; the router holds their requests meanwhile.
      await registry.start(runtime.start());
      await direct?.start();
      orphans.start();
      started = true;
    },
    async stop() {
      started = false;
      await orphans.stop();
      await direct?.stop();
      await registry.stop();
      await runtime.stop();
      writes.stop();
      storage.stop();
    },
    runtimeReadiness() {
      const status = runtime.status();
      return { ...status, ok: started && status.ok };
    },
  };
}
