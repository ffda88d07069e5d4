import type { AppEvent, Phase } from '../../../src/app-event';

/** The API's shapes the dashboard reads (api/openapi.yaml); the app events' are the server's own. */
export type { AppEvent, Phase };
/** Who may open the app's URL: anyone, or only requests with a grant (token or share link). */
export type Access = 'public' | 'private';

export interface AppView {
  app_id: string;
  name: string;
  owner: string;
  phase: Phase;
  url?: string;
  runtime: { lane: string; template: string };
  last_deployed_at: string;
  reason: string;
  message: string;
  live_version: number | null;
  last_deploy: { version: number; outcome: string; reason?: string; message?: string } | null;
  env: { name: string }[];
  access: Access;
  /** Only while a deploy, rollback or resume is in flight. */
  activity?: Activity;
  poll_after_seconds?: number;
}

export interface Activity {
  step: 'queued' | 'installing' | 'building' | 'starting' | 'health-checking' | 'switching';
  since: string;
  last_line?: string;
}

export interface VersionView {
  version: number;
  timestamp: string;
  template: string;
  lane: string;
  source_hash: string;
  env: { name: string }[];
  egress: { allowed_hosts: string[] };
  ttl: string;
  live: boolean;
  rolled_back_from?: number;
  outcome?: string;
  reason?: string;
  message?: string;
  deployed_by?: string;
}

export interface AuthInfo {
  enabled: boolean;
  mode: string;
  loginUrl: string;
  oidc?: { issuer: string; client_id: string; scopes: string[]; audience: string };
}

export interface Whoami {
  user_id: string;
  name: string;
  role: string;
  mode: string;
}

export interface ShareLink {
  token: string;
  has_password: boolean;
  expires_at: string | null;
  url: string;
}

export interface AuditEvent {
  id: string;
  time: string;
  actor: string;
  action: string;
  target: string;
  outcome: string;
  details?: AuditDetails;
}

export interface AuditDetails {
  version?: number;
  rollback?: { from?: number; to: number };
  changes?: { field: string; from?: string; to?: string }[];
  reason?: string;
  message?: string;
}

export interface User {
  id: string;
  name: string;
  role: string;
  status: string;
  department?: string;
  email?: string;
}

export interface Department {
  id: string;
  name?: string;
  description?: string;
}
