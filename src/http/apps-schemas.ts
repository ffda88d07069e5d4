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
    additionalProperties: false,
  },
  202: {
    type: 'object',
    properties: { app_id: { type: 'string' }, status_url: { type: 'string' } },
    required: ['app_id', 'status_url'],
    additionalProperties: false,
  },
} as const;

/**
 * The spec's App (§2); as a response schema it also makes fastify serialize it fast. The response
 * schemas close their objects: the serializer drops unlisted fields either way, and closed they
 * type the handlers' replies without an index signature.
 */
export const appSchema = {
  type: 'object',
  properties: {
    app_id: { type: 'string' },
    name: { type: 'string' },
    owner: { type: 'string' },
    phase: { type: 'string' },
    url: { type: 'string' },
    runtime: {
      type: 'object',
      properties: {
        lane: { type: 'string' },
        template: { type: 'string' },
        build: { type: 'string' },
      },
      required: ['lane', 'template'],
      additionalProperties: false,
    },
    last_deployed_at: { type: 'string' },
    reason: { type: 'string' },
    message: { type: 'string' },
    live_version: { type: ['integer', 'null'] },
    last_deploy: {
      type: ['object', 'null'],
      properties: {
        version: { type: 'integer' },
        outcome: { type: 'string' },
        reason: { type: 'string' },
        message: { type: 'string' },
      },
      required: ['version', 'outcome'],
      additionalProperties: false,
    },
    // Names only: env values never leave the server.
    env: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
    },
    access: { type: 'string', enum: ['public', 'private'] },
    activity: {
      type: 'object',
      properties: {
        step: {
          type: 'string',
          enum: ['queued', 'installing', 'building', 'starting', 'health-checking', 'switching'],
        },
        since: { type: 'string' },
        last_line: { type: 'string' },
      },
      required: ['step', 'since'],
      additionalProperties: false,
    },
    poll_after_seconds: { type: 'integer', minimum: 1 },
  },
  required: [
    'app_id',
    'name',
    'owner',
    'phase',
    'runtime',
    'last_deployed_at',
    'reason',
    'message',
    'live_version',
    'last_deploy',
    'env',
    'access',
  ],
  additionalProperties: false,
} as const;

const closed = { not: {} } as const;

/**
 * PATCH /v1/apps/{id}: access, and the settings that make a config release (env set/unset by
 * name, ttl, egress hosts). The shapes are checked here, the rules (names, durations, hosts) by
 * the service. `{not: {}}` rather than `false`: fastify's ajv runs with removeAdditional, which
 * would drop unknown fields silently.
 */
export const updateAppBody = {
  type: 'object',
  properties: {
    access: { type: 'string', enum: ['public', 'private'] },
    env: {
      type: 'object',
      properties: {
        set: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, value: { type: 'string' } },
            required: ['name', 'value'],
            additionalProperties: closed,
          },
        },
        unset: { type: 'array', items: { type: 'string' } },
      },
      additionalProperties: closed,
    },
    ttl: { type: 'string' },
    egress: {
      type: 'object',
      properties: { allowed_hosts: { type: 'array', items: { type: 'string' } } },
      required: ['allowed_hosts'],
      additionalProperties: closed,
    },
  },
  minProperties: 1,
  additionalProperties: closed,
} as const;

/** A config release on its way: the app, and where to poll it. */
export const appAccepted = {
  ...appSchema,
  properties: { ...appSchema.properties, status_url: { type: 'string' } },
  required: [...appSchema.required, 'status_url'],
} as const;

export const appListResponse = {
  200: {
    type: 'object',
    properties: { items: { type: 'array', items: appSchema }, total: { type: 'integer' } },
    required: ['items', 'total'],
    additionalProperties: false,
  },
} as const;
