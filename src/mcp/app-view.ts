import type { Activity } from '../actors/app-activity.js';
import type { AppSummary } from '../persistence/store.js';
import { appView, type AppView } from '../services/app-view.js';
import { firstLine } from './errors.js';

/** The App resource as the tools show it: GET /v1/apps/{id}'s, with url only where it answers. */
export type McpAppView = Omit<AppView, 'url'> & { url?: string; url_when_live?: string };

/**
 * The row knows the app's URL from its first deploy on; an agent handed that URL before anything
 * serves would open a page that fails. So `url` only once a version serves (or wakes on the next
 * request: live_version is set), and `url_when_live` says where it will be meanwhile.
 */
export function mcpAppView(app: AppSummary, activity?: Activity): McpAppView {
  const { url, ...view } = appView(app, activity);
  if (url === undefined) return view;
  return view.live_version === null ? { ...view, url_when_live: url } : { ...view, url };
}

/**
 * The view beside a failure's `logs`: messages cut to their first line, since a failed start's
 * message carries the app's last lines too and a result shows them once.
 */
export function withoutLogLines(view: McpAppView): McpAppView {
  const last = view.last_deploy;
  return {
    ...view,
    message: firstLine(view.message),
    last_deploy: last?.message === undefined ? last : { ...last, message: firstLine(last.message) },
  };
}
