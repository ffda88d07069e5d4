/**
 * Writes src/http/api-schemas.ts from api/openapi.yaml: the request schemas (path parameters,
 * query, JSON body) and the JSON success responses of every operation the REST routes serve, by
 * operationId, in the shape fastify's route `schema` option takes. The spec is the one source; the
 * routes validate, type (json-schema-to-ts) and serialize with what it says.
 * `npm run gen:api` after changing the spec; test/contract/api-schemas.test.ts fails while the
 * file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { parse as parseYaml } from 'yaml';

export const SPEC_PATH = fileURLToPath(new URL('./openapi.yaml', import.meta.url));
export const OUTPUT_PATH = fileURLToPath(new URL('../src/http/api-schemas.ts', import.meta.url));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Operations no REST route schema takes: MCP's transport, probes, docs and blobs answer by hand. */
const SKIPPED_TAGS = new Set(['mcp', 'probes', 'docs', 'internal']);
/** Documentation only: a validator or serializer has no use for them. */
const DOC_KEYS = new Set([
  'description',
  'example',
  'examples',
  'summary',
  'title',
  'externalDocs',
]);
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export async function renderSchemas(specText: string): Promise<string> {
  const spec = asObject(parseYaml(specText) as Json, 'the spec');
  const components = new Components(spec);
  const operations: string[] = [];
  for (const [path, item] of Object.entries(asObject(spec.paths ?? null, 'paths'))) {
    const pathItem = asObject(item, path);
    for (const method of METHODS) {
      const op = pathItem[method];
      if (!isObject(op) || skipped(op)) continue;
      const parameters = [...asArray(pathItem.parameters), ...asArray(op.parameters)];
      const schema = operationSchema(components, parameters, op);
      if (Object.keys(schema).length === 0) continue;
      operations.push(
        `/** ${method.toUpperCase()} ${path} */`,
        `export const ${String(op.operationId)} = ${emit(schema)} as const;`,
        '',
      );
    }
  }
  const text = [HEADER, ...components.declarations, ...operations].join('\n');
  const options = await prettier.resolveConfig(OUTPUT_PATH);
  return prettier.format(text, { ...options, filepath: OUTPUT_PATH });
}

const HEADER = `// Generated from api/openapi.yaml by \`npm run gen:api\` (api/generate-schemas.ts): do not edit.
// Change the spec and generate again; test/contract/api-schemas.test.ts fails while this is stale.
`;

/** A `$ref` to a component schema, written as the name of the constant that holds it. */
class Ref {
  constructor(readonly name: string) {}
}

type Schema = Json | Ref | Schema[] | { [key: string]: Schema };

/**
 * What a schema is for. A response schema's objects are closed where the spec leaves them open:
 * fastify's serializer drops unlisted fields either way, and closed they type a handler's reply
 * without an index signature. A request schema is the spec's as it stands.
 */
type Use = 'request' | 'response';

/** The component schemas the operations use, each declared once, before what refers to it. */
class Components {
  readonly declarations: string[] = [];
  /** Emitted text by constant name, so a component the same for both uses is declared once. */
  private readonly declared = new Map<string, string>();
  /** The converted schema behind each declared constant. */
  private readonly converted = new Map<string, Schema>();
  /** The constant already declared for an emitted text. */
  private readonly byText = new Map<string, string>();

  constructor(readonly spec: JsonObject) {}

  /** The schema with documentation keys dropped and component references named. */
  convert(schema: Json, use: Use): Schema {
    if (isObject(schema) && typeof schema.$ref === 'string') {
      const match = /^#\/components\/schemas\/([A-Za-z0-9]+)$/.exec(schema.$ref);
      if (!match) return this.convert(resolve(this.spec, schema), use);
      return this.declare(match[1] as string, use);
    }
    if (Array.isArray(schema)) return schema.map((item) => this.convert(item, use));
    if (!isObject(schema)) return schema;
    const out: { [key: string]: Schema } = {};
    for (const [key, child] of Object.entries(schema)) {
      if (DOC_KEYS.has(key)) continue;
      // Property names are data, not keywords: a property called `description` stays.
      out[key] = key === 'properties' ? this.convertEach(child, use) : this.convert(child, use);
    }
    if (use === 'response' && Array.isArray(out.allOf)) return this.merged(out.allOf);
    if (use === 'response' && out.properties !== undefined && !('additionalProperties' in out)) {
      out.additionalProperties = false;
    }
    return out;
  }

  /**
   * A response's `allOf` of objects as the one object the serializer makes of it: closed members
   * would contradict each other, and typed as an intersection nothing could satisfy them.
   */
  /** A schema operations may share (path parameters, a query, a merged reply): declared once. */
  shared(name: string, schema: Schema): Ref {
    const text = emit(schema);
    const known = this.byText.get(text);
    if (known !== undefined) return new Ref(known);
    let constant = name;
    for (let n = 2; this.declared.has(constant); n += 1) constant = `${name}${n}`;
    this.declared.set(constant, text);
    this.converted.set(constant, schema);
    this.byText.set(text, constant);
    this.declarations.push(`const ${constant} = ${text} as const;`, '');
    return new Ref(constant);
  }

  private merged(members: Schema[]): Schema {
    const properties: { [key: string]: Schema } = {};
    const required: Schema[] = [];
    const names: string[] = [];
    for (const member of members) {
      const object = member instanceof Ref ? this.converted.get(member.name) : member;
      if (!isSchemaObject(object) || !isSchemaObject(object.properties)) {
        throw new Error('a response allOf is merged only when each member is an object');
      }
      names.push(
        member instanceof Ref ? member.name : `With${pascal(Object.keys(object.properties))}`,
      );
      Object.assign(properties, object.properties);
      if (Array.isArray(object.required)) required.push(...object.required);
    }
    const schema = { type: 'object', required, properties, additionalProperties: false };
    return this.shared(names.join(''), schema);
  }

  private convertEach(properties: Json, use: Use): { [key: string]: Schema } {
    const out: { [key: string]: Schema } = {};
    for (const [name, schema] of Object.entries(asObject(properties, 'properties'))) {
      out[name] = this.convert(schema, use);
    }
    return out;
  }

  private declare(name: string, use: Use): Ref {
    const schema = resolve(this.spec, { $ref: `#/components/schemas/${name}` });
    const converted = this.convert(schema, use);
    const text = emit(converted);
    if (this.declared.get(name) === text) return new Ref(name);
    // A component both uses need, and whose response form closes objects, is declared twice.
    const constant = this.declared.has(name)
      ? `${name}${use === 'request' ? 'Input' : 'Reply'}`
      : name;
    if (this.declared.get(constant) !== text) {
      this.declared.set(constant, text);
      this.converted.set(constant, converted);
      this.declarations.push(`const ${constant} = ${text} as const;`, '');
    }
    return new Ref(constant);
  }
}

/** TypeScript source of a schema: JSON, but a reference is the constant's name. */
function emit(schema: Schema): string {
  if (schema instanceof Ref) return schema.name;
  if (Array.isArray(schema)) return `[${schema.map(emit).join(', ')}]`;
  if (schema === null || typeof schema !== 'object') return JSON.stringify(schema);
  const entries = Object.entries(schema).map(
    ([key, value]) => `${JSON.stringify(key)}: ${emit(value)}`,
  );
  return `{${entries.join(', ')}}`;
}

function skipped(op: JsonObject): boolean {
  return asArray(op.tags).some((tag) => SKIPPED_TAGS.has(String(tag)));
}

function operationSchema(
  components: Components,
  parameters: Json[],
  op: JsonObject,
): { [key: string]: Schema } {
  const schema: { [key: string]: Schema } = {};
  const params = parameterObject(components, parameters, 'path');
  if (params) schema.params = components.shared(`${params.name}Params`, params.schema);
  const query = parameterObject(components, parameters, 'query');
  if (query) schema.querystring = components.shared(`${query.name}Query`, query.schema);
  const body = jsonBody(components, op);
  if (body) schema.body = body;
  const response = successResponses(components, op);
  if (Object.keys(response).length > 0) schema.response = response;
  return schema;
}

/** Path or query parameters as one object schema; a query takes unknown names (ignored). */
function parameterObject(
  components: Components,
  parameters: Json[],
  where: string,
): { name: string; schema: Schema } | undefined {
  const { spec } = components;
  const properties: { [key: string]: Schema } = {};
  const required: string[] = [];
  const names: string[] = [];
  for (const entry of parameters) {
    const parameter = asObject(resolve(spec, entry), 'a parameter');
    if (parameter.in !== where) continue;
    const name = String(parameter.name);
    properties[name] = components.convert(parameter.schema ?? {}, 'request');
    if (parameter.required === true) required.push(name);
    // A shared parameter is named as the spec names it (AppId, UserId), else by its own name.
    const ref = isObject(entry) && typeof entry.$ref === 'string' ? entry.$ref : undefined;
    names.push(
      ref?.startsWith('#/components/parameters/') ? (ref.split('/').pop() ?? name) : pascal([name]),
    );
  }
  if (Object.keys(properties).length === 0) return undefined;
  const schema: { [key: string]: Schema } = { type: 'object', properties };
  if (required.length > 0) schema.required = required;
  return { name: names.join(''), schema };
}

/** `['resource_path', 'limit']` → `ResourcePathLimit`: a constant's name from what it holds. */
function pascal(words: string[]): string {
  return words
    .flatMap((word) => word.split(/[^A-Za-z0-9]+/))
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/**
 * A required JSON body. An optional one is read by its route: fastify would validate an absent
 * body against the schema too.
 */
function jsonBody(components: Components, op: JsonObject): Schema | undefined {
  const { spec } = components;
  if (!isObject(op.requestBody)) return undefined;
  const body = asObject(resolve(spec, op.requestBody), 'a request body');
  if (body.required !== true || !isObject(body.content)) return undefined;
  const media = body.content['application/json'];
  return isObject(media) ? components.convert(media.schema ?? {}, 'request') : undefined;
}

function successResponses(components: Components, op: JsonObject): { [key: string]: Schema } {
  const { spec } = components;
  const out: { [key: string]: Schema } = {};
  for (const [status, entry] of Object.entries(asObject(op.responses ?? {}, 'responses'))) {
    if (!/^2\d\d$/.test(status)) continue;
    const response = asObject(resolve(spec, entry), `response ${status}`);
    const media = isObject(response.content) ? response.content['application/json'] : undefined;
    if (isObject(media) && media.schema !== undefined) {
      out[status] = components.convert(media.schema, 'response');
    }
  }
  return out;
}

function resolve(spec: JsonObject, value: Json): Json {
  let current = value;
  while (isObject(current) && typeof current.$ref === 'string') {
    const ref: string = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`only local references are inlined: ${ref}`);
    let target: Json = spec;
    for (const part of ref.slice(2).split('/')) target = asObject(target, ref)[part] ?? null;
    if (target === null) throw new Error(`${ref} names nothing`);
    current = target;
  }
  return current;
}

function isSchemaObject(value: Schema | undefined): value is { [key: string]: Schema } {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Ref)
  );
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: Json, what: string): JsonObject {
  if (!isObject(value)) throw new Error(`${what} is not a mapping`);
  return value;
}

function asArray(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(OUTPUT_PATH, await renderSchemas(readFileSync(SPEC_PATH, 'utf8')));
  console.log(`wrote ${OUTPUT_PATH}`);
}
