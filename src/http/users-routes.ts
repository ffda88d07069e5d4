import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';
import { BOOTSTRAP_ADMIN_ID } from '../auth/bootstrap.js';
import { adminOnly, requireIdentity } from '../auth/guards.js';
import type { ConfiguredAdmins } from '../auth/last-admin.js';
import '../auth/plugin.js';
import { createUser, deleteUser, getUserOr404, updateUser, userJson } from '../auth/users.js';
import { userChanges, type AdminAudit } from '../services/admin-audit.js';

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

    app.get('/api/users', { schema: { response: { 200: userListSchema } } }, async () => {
      const items = store.listUsers().map(userJson);
      return { items, total: items.length };
    });

    app.post(
      '/api/users',
      { schema: { body: newUserSchema, response: { 201: createdSchema } } },
      async (request, reply) => {
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
      },
    );

    app.get(
      '/api/users/:id',
      { schema: { params: idParams, response: { 200: userSchema } } },
      async (request) => userJson(getUserOr404(store, request.params.id)),
    );

    app.patch(
      '/api/users/:id',
      { schema: { params: idParams, body: patchSchema, response: { 200: userSchema } } },
      async (request) => {
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
      },
    );

    app.delete('/api/users/:id', { schema: { params: idParams } }, async (request, reply) => {
      const { id } = request.params;
      await audit.change(requireIdentity(request), 'user.delete', id, async () =>
        deleteUser(store, id, admins),
      );
      app.auth.forget(id);
      await landed();
      return reply.status(204).send();
    });
  };

// `{not: {}}` rather than `false`: fastify's ajv runs with removeAdditional, which would silently
// drop unknown fields under `false` instead of answering 400.
const NO_EXTRA = { not: {} } as const;
const role = { type: 'string', enum: ['admin', 'user'] } as const;
const email = { type: 'string', maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' } as const;
const department = {
  type: 'string',
  pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
  maxLength: 63,
} as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

const newUserSchema = {
  type: 'object',
  required: ['name'],
  additionalProperties: NO_EXTRA,
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$' },
    role,
    department,
    email,
  },
} as const;

const patchSchema = {
  type: 'object',
  additionalProperties: NO_EXTRA,
  properties: {
    role,
    status: { type: 'string', enum: ['active', 'suspended'] },
    // Type lists, not anyOf: with fastify's type coercion, anyOf would turn null into "".
    department: { ...department, type: ['string', 'null'] },
    email: { ...email, type: ['string', 'null'] },
  },
} as const;

const userSchema = {
  type: 'object',
  required: ['id', 'name', 'role', 'status', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string' },
    status: { type: 'string' },
    department: { type: 'string' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const userListSchema = {
  type: 'object',
  required: ['items', 'total'],
  properties: { items: { type: 'array', items: userSchema }, total: { type: 'integer' } },
  additionalProperties: false,
} as const;

const createdSchema = {
  type: 'object',
  required: ['user', 'api_key'],
  properties: { user: userSchema, api_key: { type: 'string' } },
  additionalProperties: false,
} as const;

/** The admins the configuration gives (see ConfiguredAdmins), for the last-admin rule. */
function configuredAdmins({ auth }: Config): ConfiguredAdmins {
  const keys = new Set(
    auth.apiKeys.filter((key) => key.role === 'admin').map((key) => `apikey-${key.name}`),
  );
  const bootstraps = auth.enabled && auth.mode === 'apikey' && auth.apiKeys.length === 0;
  return bootstraps ? { keys, bootstrap: BOOTSTRAP_ADMIN_ID } : { keys };
}
