import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';
import { BOOTSTRAP_ADMIN_ID } from '../auth/bootstrap.js';
import { adminOnly, requireIdentity } from '../auth/guards.js';
import type { ConfiguredAdmins } from '../auth/last-admin.js';
import '../auth/plugin.js';
import { createUser, deleteUser, getUserOr404, updateUser, userJson } from '../auth/users.js';
import { userChanges, type AdminAudit } from '../services/admin-audit.js';
import * as api from './api-schemas.js';

/**
 * Admin user management under /api/users; every route needs the admin role (403 `forbidden`).
 * Creating, changing and deleting a user is audited (AdminAudit).
 */
export const usersRoutes = (audit: AdminAudit) =>
  async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    const { store } = app;
    // A store that writes behind (configmap): a change is answered once it has landed.
    const landed = async (): Promise<void> => store.flush?.();
    const configuredNames = new Set(app.config.auth.apiKeys.map((entry) => entry.name));
    const admins = configuredAdmins(app.config);
    // preValidation, not preHandler: a non-admin learns nothing about body validation either.
    app.addHook('preValidation', adminOnly);

    app.get('/api/users', { schema: api.listUsers }, async () => {
      const items = store.listUsers().map(userJson);
      return { items, total: items.length };
    });

    app.post('/api/users', { schema: api.createUser }, async (request, reply) => {
      const { user, apiKey } = await audit.change(
        requireIdentity(request),
        'user.create',
        `apikey-${request.body.name}`,
        async () => createUser(store, request.body, configuredNames),
        (made) => userChanges(undefined, made.user),
      );
      app.auth.forget(user.id);
      await landed();
      return reply.status(201).send({ user: userJson(user), api_key: apiKey });
    });

    app.get('/api/users/:id', { schema: api.getUser }, async (request) =>
      userJson(getUserOr404(store, request.params.id)),
    );

    app.patch('/api/users/:id', { schema: api.updateUser }, async (request) => {
      const { id } = request.params;
      const before = store.getUser(id);
      const user = await audit.change(
        requireIdentity(request),
        'user.update',
        id,
        async () => updateUser(store, id, request.body, admins),
        (after) => userChanges(before, after),
      );
      app.auth.forget(user.id);
      await landed();
      return userJson(user);
    });

    app.delete('/api/users/:id', { schema: api.deleteUser }, async (request, reply) => {
      const { id } = request.params;
      await audit.change(requireIdentity(request), 'user.delete', id, async () =>
        deleteUser(store, id, admins),
      );
      app.auth.forget(id);
      await landed();
      return reply.status(204).send();
    });
  };

/** The admins the configuration gives (see ConfiguredAdmins), for the last-admin rule. */
function configuredAdmins({ auth }: Config): ConfiguredAdmins {
  const keys = new Set(
    auth.apiKeys.filter((key) => key.role === 'admin').map((key) => `apikey-${key.name}`),
  );
  const bootstraps = auth.enabled && auth.mode === 'apikey' && auth.apiKeys.length === 0;
  return bootstraps ? { keys, bootstrap: BOOTSTRAP_ADMIN_ID } : { keys };
}
