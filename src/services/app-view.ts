import type { AppRecord } from '../persistence/store.js';

/** The spec's App resource (§2): list item, single-app response and rollback response. */
export interface AppView {
  app_id: string;
  name: string;
  owner: string;
  phase: string;
  url?: string;
  runtime: { lane: string; template: string };
  last_deployed_at: string;
  reason: string;
  message: string;
}

export function appView(app: AppRecord): AppView {
  const view: AppView = {
    app_id: app.id,
    name: app.name,
    owner: app.ownerId,
    phase: app.phase,
    runtime: { lane: app.lane, template: app.template },
    last_deployed_at: app.lastDeployedAt,
    reason: app.reason,
    message: app.message,
  };
  if (app.url) view.url = app.url;
  return view;
}
