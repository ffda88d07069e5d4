/** JSON schemas of the apps routes (fastify validates; failures become 400 `bad_request`). */
export const appIdParams = {
  type: 'object',
  properties: { id: { type: 'string', pattern: '^[a-z0-9-]{1,63}$' } },
  required: ['id'],
} as const;

export const listQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 0, maximum: 10_000 },
    offset: { type: 'integer', minimum: 0 },
  },
  additionalProperties: false,
} as const;

export const deployResponse = {
  200: {
    type: 'object',
    properties: { app_id: { type: 'string' }, url: { type: 'string' } },
    required: ['app_id', 'url'],
  },
  202: {
    type: 'object',
    properties: { app_id: { type: 'string' }, status_url: { type: 'string' } },
    required: ['app_id', 'status_url'],
  },
} as const;
