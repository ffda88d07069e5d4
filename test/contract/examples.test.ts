import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import {
  deref,
  isObject,
  loadSpec,
  operations,
  type Json,
  type JsonObject,
} from './openapi-doc.js';

// ajv-formats is CommonJS whose default export is the function itself under ESM interop.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const spec = loadSpec();
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addFormat('binary', true);
ajv.addSchema(spec as object, 'openapi.json');

interface Body {
  where: string;
  mediaType: string;
  media: JsonObject;
}

/** Every JSON request body and every JSON 2xx response body of the spec, with where it is. */
function bodies(): { requests: Body[]; responses: Body[] } {
  const requests: Body[] = [];
  const responses: Body[] = [];
  const mediaOf = (where: string, node: Json | undefined, into: Body[]): void => {
    const resolved = deref(spec, node);
    if (!isObject(resolved) || !isObject(resolved.content)) return;
    for (const [mediaType, media] of Object.entries(resolved.content)) {
      if (isObject(media)) into.push({ where, mediaType, media });
    }
  };
  for (const { method, path, op } of operations(spec)) {
    mediaOf(`${method} ${path} request`, op.requestBody, requests);
    if (!isObject(op.responses)) continue;
    for (const [status, response] of Object.entries(op.responses)) {
      if (status.startsWith('2')) mediaOf(`${method} ${path} ${status}`, response, responses);
    }
  }
  return { requests, responses };
}

/** The examples of a media type object: `example`, or each `examples` entry's `value`. */
function examplesOf(media: JsonObject): Json[] {
  if (media.example !== undefined) return [media.example];
  if (!isObject(media.examples)) return [];
  return Object.values(media.examples).flatMap((e) => {
    const example = deref(spec, e);
    return isObject(example) && example.value !== undefined ? [example.value] : [];
  });
}

/** Validates a value against a body's schema, its local `$ref`s resolved inside the spec. */
function validate(media: JsonObject, value: Json): string | undefined {
  const schema = media.schema;
  if (!isObject(schema)) return undefined;
  const rooted = JSON.stringify(schema).replaceAll('"#/', '"openapi.json#/');
  const check = ajv.compile(JSON.parse(rooted) as object);
  return check(value) ? undefined : ajv.errorsText(check.errors);
}

const { requests, responses } = bodies();
const isJson = (b: Body): boolean => b.mediaType === 'application/json';

describe('every body the spec documents has an example that validates', () => {
  it('has an example on each request body and each JSON success body', () => {
    const all = [...requests, ...responses.filter(isJson)];
    const missing = all.filter((b) => examplesOf(b.media).length === 0).map((b) => b.where);
    expect(missing).toEqual([]);
  });

  it.each([...requests, ...responses].filter(isJson).map((b) => [b.where, b] as const))(
    '%s: its examples validate against its schema',
    (_where, body) => {
      for (const example of examplesOf(body.media)) {
        expect(validate(body.media, example), JSON.stringify(example)).toBeUndefined();
      }
    },
  );
});
