import { POLL_AFTER_SECONDS, type Activity } from '../actors/app-activity.js';
import type { Phase } from '../app-event.js';
import type { Access, AppSummary, DeployRecord, EnvName } from '../persistence/store.js';
import type { Lane } from '../sources/templates.js';

/** The spec's App resource (§2): list item, single-app response and rollback response. */
export interface AppView {
  app_id: string;
  name: string;
  owner: string;
  phase: Phase;
  url?: string;
  runtime: { lane: Lane; template: string; build?: string };
  last_deployed_at: string;
  reason: string;
  message: string;
  /** The version that serves (or wakes on the next request); null when nothing can serve. */
  live_version: number | null;
  /** How the newest deploy or rollback went. */
  last_deploy: DeployRecord | null;
  /** The env of the release that serves (of the newest deploy while none does), names only. */
  env: { name: string }[];
  /** Who may open the URL: anyone, or only the owner, admins and share-link visitors. */
  access: Access;
  /** Only while a deploy, rollback or resume is in flight: what it is doing now. */
  activity?: Activity;
  /** With `activity`: how long a poller should wait before asking again. */
  poll_after_seconds?: number;
}

/** Env names without their values, for every view. */
export const envNames = (env: EnvName[]): { name: string }[] => env.map((e) => ({ name: e.name }));

/**
 * `activity`: the registry's for the app (AppRegistry.activity), if one is in flight. A full
 * record is a summary too; only the env's names are read.
 */
export function appView(app: AppSummary, activity?: Activity): AppView {
  const view: AppView = {
    app_id: app.id,
    name: app.name,
    owner: app.ownerId,
    phase: app.phase,
    runtime: {
      lane: app.lane,
      template: app.template,
      ...(app.build !== undefined ? { build: app.build } : {}),
    },
    last_deployed_at: app.lastDeployedAt,
    reason: app.reason,
    message: app.message,
    live_version: app.phase === 'Failed' ? null : (app.liveVersion ?? null),
    last_deploy: app.lastDeploy ?? null,
    env: envNames(app.env),
    access: app.access ?? 'public',
  };
  if (app.url) view.url = app.url;
  if (activity) {
    view.activity = activity;
    view.poll_after_seconds = POLL_AFTER_SECONDS[activity.step];
  }
  return view;
}
