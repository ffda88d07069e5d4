import type { AppRecord, EnvItem, Store, VersionRecord } from './store.js';
import type { Lane } from '../sources/templates.js';

/** What a release decides about the app that runs it. */
export interface Release {
  lane: Lane;
  template: string;
  entrypoint?: string;
  build?: string;
  env: EnvItem[];
  allowedHosts: string[];
  ttl: string;
}

/**
 * A version's release. Versions stored before releases kept their metadata lack env, egress and
 * ttl: their app's current ones stand in (as the migration that met them decided).
 */
export function releaseOf(version: VersionRecord, app: AppRecord): Release {
  return {
    lane: version.lane,
    template: version.template,
    entrypoint: version.entrypoint,
    build: version.build,
    env: version.env ?? app.env,
    allowedHosts: version.allowedHosts ?? app.allowedHosts,
    ttl: version.ttl ?? app.ttl,
  };
}

/**
 * The release the app serves (or wakes to). While none does, the newest deploy's, as the app's row
 * holds it: what a deploy that names no settings keeps, and what a config release starts from.
 */
export function liveReleaseOf(store: Store, app: AppRecord): Release {
  const live = liveVersionOf(store, app);
  if (live) return releaseOf(live, app);
  const { lane, template, entrypoint, build, env, allowedHosts, ttl } = app;
  return { lane, template, entrypoint, build, env, allowedHosts, ttl };
}

/** The version the app serves (or wakes to), if one does. */
export function liveVersionOf(store: Store, app: AppRecord): VersionRecord | undefined {
  return app.liveVersion === undefined ? undefined : store.getVersion(app.id, app.liveVersion);
}
