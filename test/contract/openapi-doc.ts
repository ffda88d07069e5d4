import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { openApiPath } from '../../src/http/docs.js';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Operation {
  method: string;
  path: string;
  op: JsonObject;
  /** Parameters declared on the path item, shared by its operations. */
  pathParameters: Json[];
}

export const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function loadSpecText(): string {
  return readFileSync(openApiPath(), 'utf8');
}

export function loadSpec(): JsonObject {
  const doc = parseYaml(loadSpecText()) as Json;
  if (!isObject(doc)) throw new Error('api/openapi.yaml is not a mapping');
  return doc;
}

export function operations(spec: JsonObject): Operation[] {
  const paths = spec.paths;
  if (!isObject(paths)) return [];
  const result: Operation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    const pathParameters = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (isObject(op)) result.push({ method: method.toUpperCase(), path, op, pathParameters });
    }
  }
  return result;
}

export const isPending = (operation: Operation): boolean =>
  operation.op['x-slipway-pending'] === true;

/** Resolves a local `#/a/b` reference; undefined when it points nowhere. */
export function resolvePointer(spec: JsonObject, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: Json | undefined = spec;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = isObject(node) ? node[key] : Array.isArray(node) ? node[Number(key)] : undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Follows `$ref` chains (parameters, responses) to the object they name. */
export function deref(spec: JsonObject, node: Json | undefined): Json | undefined {
  let current = node;
  for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
    if (hops > 10) throw new Error(`$ref cycle at ${current.$ref}`);
    current = resolvePointer(spec, current.$ref);
  }
  return current;
}

/** Every `$ref` string anywhere in the document, with where it was found. */
export function collectRefs(node: Json, at = '#'): Array<{ at: string; ref: string }> {
  if (Array.isArray(node)) return node.flatMap((child, i) => collectRefs(child, `${at}/${i}`));
  if (!isObject(node)) return [];
  return Object.entries(node).flatMap(([key, child]) =>
    key === '$ref' && typeof child === 'string'
      ? [{ at, ref: child }]
      : collectRefs(child, `${at}/${key}`),
  );
}

/**
 * One spelling for a route in both worlds: OpenAPI `{id}`, fastify `:id` (with an optional regex
 * constraint) and fastify's trailing wildcard `*` all become `{}`, so param names need not agree.
 * OpenAPI cannot say "several segments", so a wildcard is documented as one described parameter.
 */
export function routeKey(method: string, url: string): string {
  const shape = url
    .replace(/\{[^}/]+\}/g, '{}')
    .replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, '{}')
    .replace(/\/\*$/, '/{}');
  return `${method.toUpperCase()} ${shape}`;
}
