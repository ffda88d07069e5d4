// JSON schemas for kubeconform, made here: nothing can be downloaded, so the "standalone strict"
// schemas kubeconform's own registry holds are generated from the running test cluster's OpenAPI
// v3 (/openapi/v3). That covers the built-in kinds of this kube-apiserver and every CRD it serves
// (agent-sandbox's and the Gateway API's, from the CRD YAMLs build.sh caches, and the
// ServiceMonitor CRD the chart suite installs first). Each schema is standalone ($refs
// inlined) and strict (additionalProperties false wherever properties are listed and the API
// does not keep unknown fields). Cached under <cache>/schemas/<hash of the cluster's parts>.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { cacheDir, waitFor, type Api } from './cluster.js';

/** The kubeconform -schema-location template for a directory made by `chartSchemas`. */
export function schemaLocation(dir: string): string {
  return `${dir}/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json`;
}

/** Bump when the generated schemas change shape. */
const RECIPE = 1;

type Schema = { [key: string]: unknown };

/**
 * The schema directory for this cluster's parts, generated from `api` on first use (once each of
 * `groupVersions`, e.g. `monitoring.coreos.com/v1`, is published) and reused while build.sh's
 * stamps are unchanged. Returns the directory and how long it took.
 */
export async function chartSchemas(
  api: Api,
  groupVersions: string[],
): Promise<{ dir: string; ms: number; cached: boolean }> {
  const t0 = Date.now();
  const stamps = join(cacheDir, 'stamps');
  const parts = ['kubernetes', 'agent-sandbox', 'gateway-api', 'prometheus-operator']
    .map((name) => readFileSync(join(stamps, name), 'utf8'))
    .join('\n');
  const key = createHash('sha256').update(`${parts}\nrecipe=${RECIPE}`).digest('hex').slice(0, 16);
  const dir = join(cacheDir, 'schemas', key);
  if (existsSync(join(dir, '.complete'))) return { dir, ms: Date.now() - t0, cached: true };

  const tmp = `${dir}.new`;
  rmSync(tmp, { recursive: true, force: true });
  // A CRD is served before its OpenAPI is published: wait until every group-version is listed.
  let index: { paths: Record<string, { serverRelativeURL: string }> } = { paths: {} };
  await waitFor('OpenAPI v3 of every group-version', async () => {
    index = await api.must('GET', '/openapi/v3');
    return groupVersions.every((gv) => `apis/${gv}` in index.paths || gv in index.paths);
  });
  let written = 0;
  for (const { serverRelativeURL } of Object.values(index.paths)) {
    const doc = await api.must<{ components?: { schemas?: Record<string, Schema> } }>(
      'GET',
      serverRelativeURL,
    );
    const schemas = doc.components?.schemas ?? {};
    for (const [name, schema] of Object.entries(schemas)) {
      const gvks = schema['x-kubernetes-group-version-kind'] as
        { group: string; version: string; kind: string }[] | undefined;
      if (!gvks) continue;
      const standalone = inline(schemas, schema, [name]);
      for (const { group, version, kind } of gvks) {
        // kubeconform's .Group is the apiVersion before the '/', so the core group is "v1".
        const groupDir = join(tmp, group || version);
        mkdirSync(groupDir, { recursive: true });
        writeFileSync(
          join(groupDir, `${kind.toLowerCase()}_${version}.json`),
          JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', ...standalone }),
        );
        written++;
      }
    }
  }
  if (written === 0) throw new Error('chart schemas: /openapi/v3 named no kinds');
  writeFileSync(join(tmp, '.complete'), `${written} schemas\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return { dir, ms: Date.now() - t0, cached: false };
}

/** Kinds a schema directory holds, as `group/kind_version` (for the report and a sanity check). */
export function schemaKinds(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(join(dir, d.name)).map((f) => `${d.name}/${f.replace(/\.json$/, '')}`),
    );
}

/**
 * The schema with every $ref replaced by what it names (a reference back into its own chain,
 * as in JSONSchemaProps, becomes an open schema), made strict, OpenAPI's `nullable` and
 * int-or-string made plain JSON Schema.
 */
function inline(all: Record<string, Schema>, node: unknown, chain: string[]): Schema {
  if (Array.isArray(node)) return node.map((n) => inline(all, n, chain)) as unknown as Schema;
  if (typeof node !== 'object' || node === null) return node as Schema;
  const src = node as Schema;
  const ref = src.$ref;
  if (typeof ref === 'string') {
    const name = ref.replace('#/components/schemas/', '');
    const target = all[name];
    if (!target) throw new Error(`chart schemas: unresolved $ref ${ref}`);
    if (chain.includes(name)) return {};
    const rest = Object.fromEntries(Object.entries(src).filter(([k]) => k !== '$ref'));
    return { ...inline(all, rest, chain), ...inline(all, target, [...chain, name]) };
  }
  if (src['x-kubernetes-int-or-string'] === true || src.format === 'int-or-string') {
    return { oneOf: [{ type: 'string' }, { type: 'integer' }] };
  }
  const out: Schema = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === 'x-kubernetes-group-version-kind' || k === 'description') continue;
    if (k === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([p, s]) => [p, inline(all, s, chain)]),
      );
    } else if (typeof v === 'object' && v !== null) {
      out[k] = inline(all, v, chain);
    } else {
      out[k] = v;
    }
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
  }
  const keepsUnknown = src['x-kubernetes-preserve-unknown-fields'] === true;
  if (out.properties && out.additionalProperties === undefined && !keepsUnknown) {
    out.additionalProperties = false;
  }
  return out;
}
