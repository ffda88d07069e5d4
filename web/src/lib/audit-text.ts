import type { AuditEvent } from './types';

/** The action as people say it: a deploy that restored a version is a rollback. */
export function actionOf(event: AuditEvent): string {
  if (event.action !== 'deploy') return event.action;
  const rollback = event.details?.rollback;
  if (rollback) return rollback.from === rollback.to ? 'redeploy' : 'rollback';
  if (event.details?.changes) return 'settings release';
  return 'deploy';
}

/** What happened beyond the action: versions, the fields changed, why it was refused. */
export function whatOf(event: AuditEvent): string {
  const d = event.details;
  if (!d) return '';
  const parts: string[] = [];
  if (d.rollback) {
    const from = d.rollback.from === undefined ? '' : `from v${d.rollback.from} `;
    parts.push(`${from}to v${d.rollback.to}`);
  }
  if (d.version !== undefined) {
    parts.push(event.action === 'cancel' ? `cancelled v${d.version}` : `made v${d.version}`);
  }
  for (const c of d.changes ?? []) {
    if (c.from !== undefined && c.to !== undefined) parts.push(`${c.field}: ${c.from} → ${c.to}`);
    else if (c.to !== undefined) parts.push(`${c.field} → ${c.to}`);
    else if (c.from !== undefined) parts.push(`${c.field} cleared (was ${c.from})`);
    else parts.push(`${c.field} changed`);
  }
  if (d.reason) parts.push(d.message ? `${d.reason}: ${d.message}` : d.reason);
  return parts.join('; ');
}
