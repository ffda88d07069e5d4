import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const HTTP_DIR = new URL('../../src/http/', import.meta.url).pathname;

/**
 * The route plugins take their request types from their schemas (the json-schema-to-ts type
 * provider), so a cast of request data, or a route generic that claims a Body or Querystring
 * type, says something no schema checks.
 */
describe('request data in src/http is typed by the route schemas', () => {
  it('has no cast of request.body, request.query or request.params', () => {
    expect(matches(/request\.(body|query|params)\s+as\b/g)).toEqual([]);
  });

  it('has no route generic claiming a Body or Querystring type', () => {
    expect(matches(/\.(get|post|put|patch|delete|route)<\{[^>]*\b(Body|Querystring)\b/g)).toEqual(
      [],
    );
  });
});

function matches(pattern: RegExp): string[] {
  const found: string[] = [];
  for (const file of readdirSync(HTTP_DIR)) {
    if (!file.endsWith('.ts')) continue;
    const text = readFileSync(join(HTTP_DIR, file), 'utf8');
    for (const match of text.matchAll(pattern)) found.push(`${file}: ${match[0]}`);
  }
  return found;
}
