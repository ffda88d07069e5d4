// Generated from api/openapi.yaml by `npm run gen:api` (api/generate-schemas.ts): do not edit.
// Change the spec and generate again; test/contract/api-schemas.test.ts fails while this is stale.

const DeployResponse = {
  type: 'object',
  required: ['app_id'],
  properties: {
    app_id: { type: 'string' },
    url: { type: 'string', format: 'uri' },
    status_url: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const PlatformInfo = {
  type: 'object',
  required: ['backend', 'templates', 'runtimes', 'limits', 'names', 'apps'],
  properties: {
    backend: { type: 'string', enum: ['local', 'kubernetes'] },
    templates: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'available', 'lanes'],
        properties: {
          name: { type: 'string', enum: ['node', 'python', 'static'] },
          available: { type: 'boolean' },
          reason: { type: 'string' },
          lanes: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name', 'available'],
              properties: {
                name: { type: 'string', enum: ['fast', 'general'] },
                available: { type: 'boolean' },
                reason: { type: 'string' },
              },
              additionalProperties: false,
            },
          },
        },
        additionalProperties: false,
      },
    },
    runtimes: { type: 'object', additionalProperties: { type: 'string' } },
    limits: {
      type: 'object',
      required: [
        'maxSourceBytes',
        'maxUnpackedBytes',
        'maxEntries',
        'maxAppsPerOwner',
        'maxSandboxMemoryMBPerOwner',
        'maxAppsPerDepartment',
      ],
      properties: {
        maxSourceBytes: { type: 'integer' },
        maxUnpackedBytes: { type: 'integer' },
        maxEntries: { type: 'integer' },
        maxAppsPerOwner: { type: 'integer' },
        maxSandboxMemoryMBPerOwner: { type: 'integer' },
        maxAppsPerDepartment: { type: 'integer' },
      },
      additionalProperties: false,
    },
    names: {
      type: 'object',
      required: ['pattern', 'maxLength'],
      properties: { pattern: { type: 'string' }, maxLength: { type: 'integer' } },
      additionalProperties: false,
    },
    apps: {
      type: 'object',
      required: ['domain', 'urlPattern', 'defaultTtl'],
      properties: {
        domain: { type: 'string' },
        urlPattern: { type: 'string' },
        defaultTtl: { type: 'string' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

const LimitOffsetQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 0, maximum: 10000 },
    offset: { type: 'integer', minimum: 0, default: 0 },
  },
} as const;

const AppName = {
  type: 'string',
  pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
  minLength: 1,
  maxLength: 63,
} as const;

const Phase = {
  type: 'string',
  enum: ['Pending', 'Claiming', 'Starting', 'Ready', 'Suspended', 'Failed'],
} as const;

const Lane = { type: 'string', enum: ['fast', 'general'] } as const;

const Timestamp = { type: 'string', format: 'date-time' } as const;

const Outcome = { type: 'string', enum: ['Pending', 'Ready', 'Failed', 'Cancelled'] } as const;

const DeployOutcome = {
  type: 'object',
  required: ['version', 'outcome'],
  properties: {
    version: { type: 'integer', minimum: 1 },
    outcome: Outcome,
    reason: { type: 'string' },
    message: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const EnvName = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
  additionalProperties: false,
} as const;

const Access = { type: 'string', enum: ['public', 'private'] } as const;

const Activity = {
  type: 'object',
  required: ['step', 'since'],
  properties: {
    step: {
      type: 'string',
      enum: ['queued', 'installing', 'building', 'starting', 'health-checking', 'switching'],
    },
    since: Timestamp,
    last_line: { type: 'string', maxLength: 500 },
  },
  additionalProperties: false,
} as const;

const App = {
  type: 'object',
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
  properties: {
    app_id: { type: 'string' },
    name: AppName,
    owner: { type: 'string' },
    phase: Phase,
    url: { type: 'string', format: 'uri' },
    runtime: {
      type: 'object',
      required: ['lane', 'template'],
      properties: { lane: Lane, template: { type: 'string' }, build: { type: 'string' } },
      additionalProperties: false,
    },
    last_deployed_at: Timestamp,
    reason: { type: 'string' },
    message: { type: 'string' },
    live_version: { type: ['integer', 'null'] },
    last_deploy: { oneOf: [DeployOutcome, { type: 'null' }] },
    env: { type: 'array', items: EnvName },
    access: Access,
    activity: Activity,
    poll_after_seconds: { type: 'integer', minimum: 1 },
  },
  additionalProperties: false,
} as const;

const AppList = {
  type: 'object',
  required: ['items', 'total'],
  properties: { items: { type: 'array', items: App }, total: { type: 'integer', minimum: 0 } },
  additionalProperties: false,
} as const;

const AppIdParams = {
  type: 'object',
  properties: { id: { type: 'string', pattern: '^[a-z0-9-]{1,63}$' } },
  required: ['id'],
} as const;

const Duration = {
  type: 'string',
  pattern:
    '^\\+?((0+\\.?0*|\\.0+)(ns|us|µs|μs|ms|s|m|h))*([0-9]*[1-9][0-9]*\\.?[0-9]*|[0-9]*\\.[0-9]*[1-9][0-9]*)(ns|us|µs|μs|ms|s|m|h)(([0-9]+\\.?[0-9]*|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$',
} as const;

const UpdateAppRequest = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    access: Access,
    env: {
      type: 'object',
      minProperties: 1,
      additionalProperties: false,
      properties: {
        set: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['name', 'value'],
            additionalProperties: false,
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
              value: { type: 'string' },
            },
          },
        },
        unset: {
          type: 'array',
          minItems: 1,
          items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
        },
      },
    },
    ttl: Duration,
    egress: {
      type: 'object',
      required: ['allowed_hosts'],
      additionalProperties: false,
      properties: {
        allowed_hosts: {
          type: 'array',
          items: {
            type: 'string',
            pattern:
              '^(\\[[0-9A-Fa-f:.]+\\](:[0-9]{1,5})?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*|(\\*\\.)?[A-Za-z0-9_.-]+(:[0-9]{1,5})?)$',
          },
        },
      },
    },
  },
} as const;

const AppWithStatusUrl = {
  type: 'object',
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
    'status_url',
  ],
  properties: {
    app_id: { type: 'string' },
    name: AppName,
    owner: { type: 'string' },
    phase: Phase,
    url: { type: 'string', format: 'uri' },
    runtime: {
      type: 'object',
      required: ['lane', 'template'],
      properties: { lane: Lane, template: { type: 'string' }, build: { type: 'string' } },
      additionalProperties: false,
    },
    last_deployed_at: Timestamp,
    reason: { type: 'string' },
    message: { type: 'string' },
    live_version: { type: ['integer', 'null'] },
    last_deploy: { oneOf: [DeployOutcome, { type: 'null' }] },
    env: { type: 'array', items: EnvName },
    access: Access,
    activity: Activity,
    poll_after_seconds: { type: 'integer', minimum: 1 },
    status_url: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const FollowVersionQuery = {
  type: 'object',
  properties: {
    follow: { type: 'boolean', default: false },
    version: { type: 'integer', minimum: 1 },
  },
} as const;

const Version = {
  type: 'object',
  required: [
    'version',
    'timestamp',
    'template',
    'lane',
    'source_hash',
    'runtime',
    'env',
    'egress',
    'ttl',
    'live',
  ],
  properties: {
    version: { type: 'integer', minimum: 1 },
    timestamp: Timestamp,
    template: { type: 'string' },
    lane: Lane,
    source_hash: { type: 'string' },
    rolled_back_from: { type: 'integer' },
    runtime: {
      type: 'object',
      required: ['template', 'lane'],
      properties: {
        template: { type: 'string' },
        lane: Lane,
        entrypoint: { type: 'string' },
        build: { type: 'string' },
      },
      additionalProperties: false,
    },
    env: { type: 'array', items: EnvName },
    egress: {
      type: 'object',
      required: ['allowed_hosts'],
      properties: { allowed_hosts: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
    ttl: Duration,
    outcome: Outcome,
    reason: { type: 'string' },
    message: { type: 'string' },
    live: { type: 'boolean' },
    deployed_by: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const VersionList = {
  type: 'object',
  required: ['items'],
  properties: { items: { type: 'array', items: Version } },
  additionalProperties: false,
} as const;

const RollbackRequest = {
  type: 'object',
  required: ['version'],
  properties: { version: { type: 'integer' } },
} as const;

const ShareLink = {
  type: 'object',
  required: ['token', 'app_id', 'has_password', 'expires_at', 'created_at', 'url'],
  properties: {
    token: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    app_id: { type: 'string' },
    has_password: { type: 'boolean' },
    expires_in: { type: 'string' },
    expires_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: Timestamp,
    url: { type: 'string', format: 'uri' },
  },
  additionalProperties: false,
} as const;

const ShareLinkList = {
  type: 'object',
  required: ['items', 'total'],
  properties: {
    items: { type: 'array', items: ShareLink },
    total: { type: 'integer', minimum: 0 },
  },
  additionalProperties: false,
} as const;

const ShareTokenParams = {
  type: 'object',
  properties: { token: { type: 'string' } },
  required: ['token'],
} as const;

const ShareView = {
  type: 'object',
  required: ['name', 'status', 'url', 'access'],
  properties: {
    name: { type: 'string' },
    status: Phase,
    url: { type: 'string' },
    access: Access,
    grant_url: { type: 'string', format: 'uri' },
  },
  additionalProperties: false,
} as const;

const LimitQuery = {
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 200 } },
} as const;

const AuditAction = {
  type: 'string',
  enum: [
    'deploy',
    'delete',
    'suspend',
    'resume',
    'update',
    'cancel',
    'user.create',
    'user.update',
    'user.delete',
    'department.create',
    'department.update',
    'department.delete',
  ],
} as const;

const AuditDetails = {
  type: 'object',
  properties: {
    version: { type: 'integer', minimum: 1 },
    rollback: {
      type: 'object',
      required: ['to'],
      properties: { from: { type: 'integer' }, to: { type: 'integer' } },
      additionalProperties: false,
    },
    changes: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field'],
        properties: { field: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' } },
        additionalProperties: false,
      },
    },
    reason: { type: 'string' },
    message: { type: 'string', maxLength: 500 },
  },
  additionalProperties: false,
} as const;

const AuditEvent = {
  type: 'object',
  required: ['id', 'time', 'actor', 'action', 'target', 'outcome', 'tenant_id', 'source_hash'],
  properties: {
    id: { type: 'string' },
    time: Timestamp,
    actor: { type: 'string' },
    action: AuditAction,
    target: { type: 'string' },
    outcome: { type: 'string', enum: ['ok', 'denied', 'failed', 'rejected', 'noop', 'error'] },
    tenant_id: { type: 'string' },
    source_hash: { type: 'string' },
    details: AuditDetails,
  },
  additionalProperties: false,
} as const;

const AuditList = {
  type: 'object',
  required: ['events'],
  properties: { events: { type: 'array', items: AuditEvent } },
  additionalProperties: false,
} as const;

const ActorActionAppLimitQuery = {
  type: 'object',
  properties: {
    actor: { type: 'string', minLength: 1 },
    action: AuditAction,
    app: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 200 },
  },
} as const;

const AuthInfo = {
  type: 'object',
  required: ['enabled', 'mode', 'loginUrl'],
  properties: {
    enabled: { type: 'boolean' },
    mode: { type: 'string' },
    loginUrl: { type: 'string' },
    oidc: {
      type: 'object',
      required: ['issuer', 'client_id', 'scopes', 'audience'],
      properties: {
        issuer: { type: 'string' },
        client_id: { type: 'string' },
        scopes: { type: 'array', items: { type: 'string' } },
        audience: { type: 'string' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const;

const Role = { type: 'string', enum: ['admin', 'user'] } as const;

const Whoami = {
  type: 'object',
  required: ['user_id', 'name', 'role', 'scopes', 'mode'],
  properties: {
    user_id: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    role: Role,
    department: { type: 'string' },
    scopes: { type: 'array', items: { type: 'string' } },
    mode: { type: 'string' },
  },
  additionalProperties: false,
} as const;

const ProtectedResourceMetadata = {
  type: 'object',
  required: ['resource'],
  properties: {
    resource: { type: 'string', format: 'uri' },
    authorization_servers: { type: 'array', items: { type: 'string', format: 'uri' } },
    scopes_supported: { type: 'array', items: { type: 'string' } },
    bearer_methods_supported: { type: 'array', items: { type: 'string' } },
    resource_name: { type: 'string' },
  },
  additionalProperties: true,
} as const;

const ResourcePathParams = {
  type: 'object',
  properties: { resource_path: { type: 'string' } },
  required: ['resource_path'],
} as const;

const UserStatus = { type: 'string', enum: ['active', 'suspended'] } as const;

const User = {
  type: 'object',
  required: ['id', 'name', 'role', 'status', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    role: Role,
    status: UserStatus,
    department: { type: 'string' },
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  additionalProperties: false,
} as const;

const UserList = {
  type: 'object',
  required: ['items', 'total'],
  properties: { items: { type: 'array', items: User }, total: { type: 'integer', minimum: 0 } },
  additionalProperties: false,
} as const;

const Slug = { type: 'string', pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$', maxLength: 63 } as const;

const Email = { type: 'string', pattern: '^[^\\s@]+@[^\\s@]+$', maxLength: 254 } as const;

const CreateUserRequest = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$' },
    role: Role,
    department: Slug,
    email: Email,
  },
} as const;

const CreatedUser = {
  type: 'object',
  required: ['user', 'api_key'],
  properties: { user: User, api_key: { type: 'string' } },
  additionalProperties: false,
} as const;

const UserIdParams = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 255 } },
  required: ['id'],
} as const;

const UpdateUserRequest = {
  type: 'object',
  additionalProperties: false,
  properties: {
    role: Role,
    status: UserStatus,
    department: { oneOf: [Slug, { type: 'null' }] },
    email: { oneOf: [Email, { type: 'null' }] },
  },
} as const;

const Department = {
  type: 'object',
  required: ['id', 'name', 'created_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    created_at: Timestamp,
  },
  additionalProperties: false,
} as const;

const DepartmentList = {
  type: 'object',
  required: ['items', 'total'],
  properties: {
    items: { type: 'array', items: Department },
    total: { type: 'integer', minimum: 0 },
  },
  additionalProperties: false,
} as const;

const CreateDepartmentRequest = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: Slug,
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 2000 },
  },
} as const;

const DepartmentIdParams = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 63 } },
  required: ['id'],
} as const;

const UpdateDepartmentRequest = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: ['string', 'null'], maxLength: 2000 },
  },
} as const;

/** POST /v1/deploy */
export const deployApp = { response: { '200': DeployResponse, '202': DeployResponse } } as const;

/** GET /v1/templates */
export const getTemplates = { response: { '200': PlatformInfo } } as const;

/** GET /v1/apps */
export const listApps = { querystring: LimitOffsetQuery, response: { '200': AppList } } as const;

/** GET /v1/apps/{id} */
export const getApp = { params: AppIdParams, response: { '200': App } } as const;

/** DELETE /v1/apps/{id} */
export const deleteApp = { params: AppIdParams } as const;

/** PATCH /v1/apps/{id} */
export const updateApp = {
  params: AppIdParams,
  body: UpdateAppRequest,
  response: { '200': App, '202': AppWithStatusUrl },
} as const;

/** POST /v1/apps/{id}/suspend */
export const suspendApp = { params: AppIdParams, response: { '200': App } } as const;

/** POST /v1/apps/{id}/cancel */
export const cancelDeploy = { params: AppIdParams, response: { '200': App } } as const;

/** POST /v1/apps/{id}/resume */
export const resumeApp = { params: AppIdParams, response: { '200': App } } as const;

/** GET /v1/apps/{id}/logs */
export const streamAppLogs = { params: AppIdParams, querystring: FollowVersionQuery } as const;

/** GET /v1/apps/{id}/versions */
export const listAppVersions = { params: AppIdParams, response: { '200': VersionList } } as const;

/** POST /v1/apps/{id}/rollback */
export const rollbackApp = {
  params: AppIdParams,
  body: RollbackRequest,
  response: { '200': App, '202': AppWithStatusUrl },
} as const;

/** GET /v1/apps/{id}/share-links */
export const listShareLinks = {
  params: AppIdParams,
  querystring: LimitOffsetQuery,
  response: { '200': ShareLinkList },
} as const;

/** POST /v1/apps/{id}/share-links */
export const createShareLink = { params: AppIdParams, response: { '200': ShareLink } } as const;

/** GET /api/share/{token} */
export const resolveShareLink = {
  params: ShareTokenParams,
  response: { '200': ShareView },
} as const;

/** POST /api/share/{token} */
export const unlockShareLink = {
  params: ShareTokenParams,
  response: { '200': ShareView },
} as const;

/** DELETE /api/share-links/{token} */
export const revokeShareLink = { params: ShareTokenParams } as const;

/** GET /v1/apps/{id}/audit */
export const listAppAuditEvents = {
  params: AppIdParams,
  querystring: LimitQuery,
  response: { '200': AuditList },
} as const;

/** GET /v1/audit */
export const listAuditEvents = {
  querystring: ActorActionAppLimitQuery,
  response: { '200': AuditList },
} as const;

/** GET /api/auth */
export const getAuthInfo = { response: { '200': AuthInfo } } as const;

/** GET /api/whoami */
export const whoami = { response: { '200': Whoami } } as const;

/** GET /.well-known/oauth-protected-resource */
export const getProtectedResourceMetadata = {
  response: { '200': ProtectedResourceMetadata },
} as const;

/** GET /.well-known/oauth-protected-resource/{resource_path} */
export const getProtectedResourceMetadataForPath = {
  params: ResourcePathParams,
  response: { '200': ProtectedResourceMetadata },
} as const;

/** GET /api/users */
export const listUsers = { response: { '200': UserList } } as const;

/** POST /api/users */
export const createUser = { body: CreateUserRequest, response: { '201': CreatedUser } } as const;

/** GET /api/users/{id} */
export const getUser = { params: UserIdParams, response: { '200': User } } as const;

/** DELETE /api/users/{id} */
export const deleteUser = { params: UserIdParams } as const;

/** PATCH /api/users/{id} */
export const updateUser = {
  params: UserIdParams,
  body: UpdateUserRequest,
  response: { '200': User },
} as const;

/** GET /api/departments */
export const listDepartments = { response: { '200': DepartmentList } } as const;

/** POST /api/departments */
export const createDepartment = {
  body: CreateDepartmentRequest,
  response: { '201': Department },
} as const;

/** GET /api/departments/{id} */
export const getDepartment = {
  params: DepartmentIdParams,
  response: { '200': Department },
} as const;

/** DELETE /api/departments/{id} */
export const deleteDepartment = { params: DepartmentIdParams } as const;

/** PATCH /api/departments/{id} */
export const updateDepartment = {
  params: DepartmentIdParams,
  body: UpdateDepartmentRequest,
  response: { '200': Department },
} as const;
