import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import type { FastifyInstance } from 'fastify';
import {
  createDepartment,
  deleteDepartment,
  departmentJson,
  getDepartmentOr404,
  updateDepartment,
} from '../auth/departments.js';
import { adminOnly, requireIdentity } from '../auth/guards.js';
import { departmentChanges, type AdminAudit } from '../services/admin-audit.js';

/**
 * Admin department management under /api/departments; every route needs the admin role.
 * Creating, changing and deleting a department is audited (AdminAudit).
 */
export const departmentsRoutes = (audit: AdminAudit) =>
  async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    const { store } = app;
    // A store that writes behind (configmap): a change is answered once it has landed.
    const landed = async (): Promise<void> => store.flush?.();
    app.addHook('preValidation', adminOnly);

    app.get('/api/departments', { schema: { response: { 200: listSchema } } }, async () => {
      const items = store.listDepartments().map(departmentJson);
      return { items, total: items.length };
    });

    app.post(
      '/api/departments',
      { schema: { body: newSchema, response: { 201: departmentSchema } } },
      async (request, reply) => {
        const department = await audit.change(
          requireIdentity(request),
          'department.create',
          request.body.id,
          async () => createDepartment(store, request.body),
          (made) => departmentChanges(undefined, made),
        );
        await landed();
        return reply.status(201).send(departmentJson(department));
      },
    );

    app.get(
      '/api/departments/:id',
      { schema: { params: idParams, response: { 200: departmentSchema } } },
      async (request) => departmentJson(getDepartmentOr404(store, request.params.id)),
    );

    app.patch(
      '/api/departments/:id',
      { schema: { params: idParams, body: patchSchema, response: { 200: departmentSchema } } },
      async (request) => {
        const { id } = request.params;
        const before = store.getDepartment(id);
        const department = await audit.change(
          requireIdentity(request),
          'department.update',
          id,
          async () => updateDepartment(store, id, request.body),
          (after) => departmentChanges(before, after),
        );
        await landed();
        return departmentJson(department);
      },
    );

    app.delete('/api/departments/:id', { schema: { params: idParams } }, async (request, reply) => {
      const { id } = request.params;
      await audit.change(requireIdentity(request), 'department.delete', id, async () =>
        deleteDepartment(store, id),
      );
      await landed();
      return reply.status(204).send();
    });
  };

// `{not: {}}` rather than `false`: fastify's ajv runs with removeAdditional, which would silently
// drop unknown fields under `false` instead of answering 400.
const NO_EXTRA = { not: {} } as const;
const departmentId = {
  type: 'string',
  pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
  maxLength: 63,
} as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;
const description = { type: 'string', maxLength: 2000 } as const;

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 63 } },
} as const;

const newSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: NO_EXTRA,
  properties: { id: departmentId, name, description },
} as const;

const patchSchema = {
  type: 'object',
  additionalProperties: NO_EXTRA,
  properties: { name, description: { ...description, type: ['string', 'null'] } },
} as const;

const departmentSchema = {
  type: 'object',
  required: ['id', 'name', 'created_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    created_at: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const listSchema = {
  type: 'object',
  required: ['items', 'total'],
  properties: { items: { type: 'array', items: departmentSchema }, total: { type: 'integer' } },
  additionalProperties: false,
} as const;
