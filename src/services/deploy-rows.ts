/**
 * The rows a deploy stores before the app machine takes it up: the release (its version) and the
 * app's head row. Both record what the classifier decided, or why the source cannot run.
 */
import type { Identity } from '../auth/identity.js';
import type { Release } from '../persistence/release.js';
import type { Access, AppRecord, RuntimeOverrides, VersionRecord } from '../persistence/store.js';
import type { Classification } from '../sources/classify.js';
import type { DeployMetadata, RuntimeAsk } from './deploy-metadata.js';

export interface ReleaseInput {
  metadata: DeployMetadata;
  identity: Identity;
  plan: Classification;
  /** The app as stored before this deploy, if it exists. */
  existing: AppRecord | undefined;
  /** The existing app's live release (liveReleaseOf): the settings a deploy that names none keeps. */
  live?: Release;
  version: number;
  sourceKey: string;
  sourceHash: string;
  now: string;
  /** `apps.defaultAccess`: a new app's access when the metadata names none. */
  defaultAccess: Access;
}

/** A new app's idle time before suspend when its deploy names none. */
const DEFAULT_TTL = '30m';

export function releaseRows(input: ReleaseInput): { app: AppRecord; version: VersionRecord } {
  const { metadata, identity, plan, existing, version, now, live } = input;
  const asked = metadata.runtime ?? {};
  const overrides = overridesOf(asked);
  // Config carries over: only what the metadata names replaces the live release's (`env: []` too).
  const settings = {
    env: metadata.env ?? live?.env ?? [],
    allowedHosts: metadata.allowedHosts ?? live?.allowedHosts ?? [],
    ttl: metadata.ttl ?? live?.ttl ?? DEFAULT_TTL,
  };
  // Who may open the app is the owner's choice, not the release's: it holds even when the release
  // cannot run, and a redeploy that names none keeps it (rows from before it are public).
  const access = metadata.access ?? existing?.access ?? (existing ? 'public' : input.defaultAccess);
  const runtime = {
    lane: plan.ok ? plan.lane : (asked.lane ?? 'fast'),
    template: plan.ok ? plan.template : (asked.template ?? 'unknown'),
    entrypoint: plan.ok ? plan.entrypoint : asked.entrypoint,
    build: asked.build,
  };
  const failure = plan.ok
    ? undefined
    : { outcome: 'Failed' as const, reason: plan.reason, message: plan.message };
  const release: VersionRecord = {
    appId: metadata.name,
    version,
    timestamp: now,
    ...runtime,
    sourceHash: input.sourceHash,
    sourceKey: input.sourceKey,
    ...(overrides ? { overrides } : {}),
    ...settings,
    deployedBy: identity.userId,
    ...(failure ?? { outcome: 'Pending' as const }),
  };
  // A release that cannot run leaves a live app as it is: its version records why, and the
  // machine, which fails it before any sandbox, keeps the live release serving.
  if (failure && existing) {
    return { app: { ...existing, access, lastDeployedAt: now }, version: release };
  }
  const app: AppRecord = {
    id: metadata.name,
    name: metadata.name,
    ownerId: existing?.ownerId ?? identity.userId,
    department: existing?.department ?? identity.department,
    phase: failure ? 'Failed' : 'Pending',
    reason: failure?.reason ?? 'Queued',
    message: failure?.message ?? `version ${version} queued`,
    url: existing?.url,
    ...runtime,
    ...settings,
    access,
    currentVersion: existing?.currentVersion ?? 0,
    createdAt: existing?.createdAt ?? now,
    lastDeployedAt: now,
    liveVersion: existing?.liveVersion,
    // Until the machine takes the deploy up; a new app that cannot run failed here.
    lastDeploy: failure ? { version, ...failure } : existing?.lastDeploy,
    snapshot: existing?.snapshot,
  };
  return { app, version: release };
}

/** What a redeploy that names no runtime asks for again: the live release's overrides and build. */
export interface CarriedRuntime {
  overrides?: RuntimeOverrides;
  build?: string;
}

/**
 * The runtime overrides a deploy runs with: its own when it names a runtime (`{}`: none), else
 * what the live release asked for. The classifier decides the rest again for the new source.
 */
export function carriedRuntime(
  asked: RuntimeAsk | undefined,
  live: CarriedRuntime | undefined,
): RuntimeAsk {
  if (asked !== undefined) return asked;
  const carried: RuntimeAsk = {};
  const { lane, template, entrypoint } = live?.overrides ?? {};
  if (lane === 'fast' || lane === 'general') carried.lane = lane;
  if (template !== undefined) carried.template = template;
  if (entrypoint !== undefined) carried.entrypoint = entrypoint;
  if (live?.build !== undefined) carried.build = live.build;
  return carried;
}

/** The lane, template and entrypoint a deploy asked for; undefined when it asked for none. */
function overridesOf(runtime: RuntimeAsk): RuntimeOverrides | undefined {
  const { lane, template, entrypoint } = runtime;
  const overrides: RuntimeOverrides = {};
  if (lane !== undefined) overrides.lane = lane;
  if (template !== undefined) overrides.template = template;
  if (entrypoint !== undefined) overrides.entrypoint = entrypoint;
  return Object.keys(overrides).length > 0 ? overrides : undefined;
}
