// Shared by the server and the dashboard (web/ imports it): nothing here imports anything, so
// both type-check it with their own settings.

/**
 * A rollback is recorded as a deploy (its details say so); `update` is a change of the app's
 * settings (its access). The `user.*` and `department.*` actions target a user or department ID.
 */
export type AuditAction = AppAuditAction | AdminAuditAction;
export type AppAuditAction = 'deploy' | 'delete' | 'suspend' | 'resume' | 'update' | 'cancel';
export type AdminAuditAction =
  | 'user.create'
  | 'user.update'
  | 'user.delete'
  | 'department.create'
  | 'department.update'
  | 'department.delete';

export const APP_AUDIT_ACTIONS: readonly AppAuditAction[] = [
  'deploy',
  'delete',
  'suspend',
  'resume',
  'update',
  'cancel',
];
export const ADMIN_AUDIT_ACTIONS: readonly AdminAuditAction[] = [
  'user.create',
  'user.update',
  'user.delete',
  'department.create',
  'department.update',
  'department.delete',
];
