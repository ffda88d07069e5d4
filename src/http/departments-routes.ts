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
import * as api from './api-schemas.js';

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

    app.get('/api/departments', { schema: api.listDepartments }, async () => {
      const items = store.listDepartments().map(departmentJson);
      return { items, total: items.length };
    });

    app.post('/api/departments', { schema: api.createDepartment }, async (request, reply) => {
      const department = await audit.change(
        requireIdentity(request),
        'department.create',
        request.body.id,
        async () => createDepartment(store, request.body),
        (made) => departmentChanges(undefined, made),
      );
      await landed();
      return reply.status(201).send(departmentJson(department));
    });

    app.get('/api/departments/:id', { schema: api.getDepartment }, async (request) =>
      departmentJson(getDepartmentOr404(store, request.params.id)),
    );

    app.patch('/api/departments/:id', { schema: api.updateDepartment }, async (request) => {
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
    });

    app.delete('/api/departments/:id', { schema: api.deleteDepartment }, async (request, reply) => {
      const { id } = request.params;
      await audit.change(requireIdentity(request), 'department.delete', id, async () =>
        deleteDepartment(store, id),
      );
      await landed();
      return reply.status(204).send();
    });
  };
