import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OUTPUT_PATH, renderSchemas, SPEC_PATH } from '../../api/generate-schemas.js';
import * as api from '../../src/http/api-schemas.js';
import { AUDIT_DEFAULT_LIMIT, AUDIT_MAX_LIMIT } from '../../src/services/audit-trail.js';

describe('src/http/api-schemas.ts, generated from api/openapi.yaml', () => {
  it('is what `npm run gen:api` makes of the spec as it is now', async () => {
    const expected = await renderSchemas(readFileSync(SPEC_PATH, 'utf8'));
    expect(readFileSync(OUTPUT_PATH, 'utf8')).toBe(expected);
  });

  it('closes response objects, and leaves request objects as the spec has them', () => {
    const app = api.getApp.response['200'];
    expect(app.additionalProperties).toBe(false);
    expect(api.listApps.querystring).not.toHaveProperty('additionalProperties');
    expect(api.updateUser.body.additionalProperties).toBe(false);
  });

  it('merges a response allOf into one object the serializer and the types can read', () => {
    const accepted = api.updateApp.response['202'];
    expect(accepted.properties).toHaveProperty('status_url');
    expect(accepted.properties).toHaveProperty('app_id');
    expect(accepted.required).toContain('status_url');
  });

  it("bounds the audit feed's limit as the audit trail does", () => {
    const { limit } = api.listAuditEvents.querystring.properties;
    expect(limit.maximum).toBe(AUDIT_MAX_LIMIT);
    expect(limit.default).toBe(AUDIT_DEFAULT_LIMIT);
  });
});
