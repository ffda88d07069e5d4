import { AppError, notFound } from '../errors.js';
import type { DepartmentRecord, Store } from '../persistence/store.js';

export interface DepartmentJson {
  id: string;
  name: string;
  description?: string;
  created_at: string;
}

export interface DepartmentPatch {
  name?: string;
  /** null clears it. */
  description?: string | null;
}

export function departmentJson(d: DepartmentRecord): DepartmentJson {
  const json: DepartmentJson = { id: d.id, name: d.name, created_at: d.createdAt };
  if (d.description) json.description = d.description;
  return json;
}

export function createDepartment(
  store: Store,
  input: { id: string; name?: string; description?: string },
): DepartmentRecord {
  if (store.getDepartment(input.id)) {
    throw new AppError(409, 'name_taken', `department ${input.id} already exists`);
  }
  const department: DepartmentRecord = {
    id: input.id,
    name: input.name ?? input.id,
    createdAt: new Date().toISOString(),
    ...(input.description ? { description: input.description } : {}),
  };
  store.putDepartment(department);
  return department;
}

export function getDepartmentOr404(store: Store, id: string): DepartmentRecord {
  const department = store.getDepartment(id);
  if (!department) throw notFound(`department ${id}`);
  return department;
}

export function updateDepartment(
  store: Store,
  id: string,
  patch: DepartmentPatch,
): DepartmentRecord {
  const department = { ...getDepartmentOr404(store, id) };
  if (patch.name !== undefined) department.name = patch.name;
  if (patch.description === null || patch.description === '') delete department.description;
  else if (patch.description !== undefined) department.description = patch.description;
  store.putDepartment(department);
  return department;
}

/** Refuses (409 `in_use`) while users or apps still name the department: they would dangle. */
export function deleteDepartment(store: Store, id: string): void {
  getDepartmentOr404(store, id);
  const users = store.listUsers().filter((u) => u.department === id).length;
  const apps = store.listApps({}).items.filter((a) => a.department === id).length;
  if (users > 0 || apps > 0) {
    throw new AppError(
      409,
      'in_use',
      `department ${id} is still used by ${users} user(s) and ${apps} app(s)`,
      {
        users,
        apps,
      },
    );
  }
  store.deleteDepartment(id);
}
