// The README's configuration reference (the YAML under "## Configuration") names every key the
// config schema accepts and no other, and is itself a valid config: a key added to the schema
// without a line in the reference fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { z } from 'zod';
import { configSchema } from '../../src/config/schema.js';

const ROOT = new URL('../..', import.meta.url).pathname;

/** What a key holds: keys of its own, a list of entries with keys, or a value (records too). */
type Kind = 'object' | 'list' | 'value';

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
}

const defOf = (schema: z.ZodType): Def => schema.def as Def;

/** The schema under defaults, optionals and pipes. */
function unwrap(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  if (def.innerType) return unwrap(def.innerType);
  if (def.type === 'pipe' && def.in) return unwrap(def.in);
  return schema;
}

/** Every key the schema accepts, dotted; a list's entries' keys under `list[]`. */
function schemaKeys(schema: z.ZodType, prefix: string, out: Map<string, Kind>): Map<string, Kind> {
  for (const [key, child] of Object.entries(defOf(unwrap(schema)).shape ?? {})) {
    const path = prefix + key;
    const def = defOf(unwrap(child));
    const element = def.type === 'array' && def.element ? defOf(unwrap(def.element)) : undefined;
    if (def.type === 'object') {
      out.set(path, 'object');
      schemaKeys(child, `${path}.`, out);
    } else if (element?.type === 'object' && def.element) {
      out.set(path, 'list');
      schemaKeys(def.element, `${path}[].`, out);
    } else {
      out.set(path, 'value');
    }
  }
  return out;
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The keys a YAML document sets, read as the schema reads them (a record's keys are its value). */
function documentedKeys(
  doc: unknown,
  kinds: Map<string, Kind>,
  prefix = '',
  out = new Set<string>(),
) {
  if (!isMap(doc)) return out;
  for (const [key, value] of Object.entries(doc)) {
    const path = prefix + key;
    out.add(path);
    const kind = kinds.get(path);
    if (kind === 'object') documentedKeys(value, kinds, `${path}.`, out);
    if (kind === 'list' && Array.isArray(value)) {
      for (const entry of value) documentedKeys(entry, kinds, `${path}[].`, out);
    }
  }
  return out;
}

function referenceYaml(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('README: no yaml block under ## Configuration');
  return block;
}

describe('the README configuration reference', () => {
  const doc: unknown = parse(referenceYaml());
  const kinds = schemaKeys(configSchema, '', new Map());

  it('names every key the config schema accepts, and only those', () => {
    expect([...documentedKeys(doc, kinds)].sort()).toEqual([...kinds.keys()].sort());
  });

  it('is a valid config', () => {
    const result = configSchema.safeParse(doc);
    expect(result.error?.issues ?? []).toEqual([]);
  });
});
