import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import { requireIdentity } from '../auth/guards.js';
import { answerAsBatch, isBatch, isEmptyBatch } from './batch.js';
import { cancellations, InFlightCalls } from './in-flight.js';
import { buildMcpServer } from './mcp-server.js';
import { corsHeaders, originKind, preflightHeaders } from './origin.js';
import { explainSdkErrors } from './sdk-errors.js';
import type { McpServices, ToolContext } from './tool.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

const PATHS = ['/mcp', '/mcp/'] as const;

/**
 * The MCP endpoint (spec §4): streamable HTTP at /mcp and /mcp/, stateless. Each POST gets its own
 * server and transport, bound to the caller the auth hook identified (it guards /mcp like /v1 and
 * answers 401 with its WWW-Authenticate challenge before this runs). Stateless, so there is no
 * session to stream to (GET) or to end (DELETE): both answer 405, which MCP clients expect.
 * Browser-based clients are served from the origins in `mcp.allowedOrigins` (CORS) or their own.
 */
export function mcpRoutes(services: McpServices) {
  // A deploy may carry its source as base64: room for the largest allowed source, plus the rest.
  const bodyLimit = Math.ceil(services.maxSourceBytes / 3) * 4 + 1024 * 1024;
  const calls = new InFlightCalls();
  return async function routes(app: FastifyInstance): Promise<void> {
    const listed = new Set(app.config.mcp.allowedOrigins);
    // A preflight carries no credentials (Fetch spec), so it cannot pass bearer auth; it runs no
    // tool, and the route below answers it from the allow-list alone.
    app.auth.exempt(
      (request) => request.method === 'OPTIONS' && isMcpPath(request.routeOptions.url),
    );
    // Registered in this plugin: they guard and decorate the /mcp routes only.
    app.addHook('onRequest', async (request, reply) => {
      if (request.method === 'OPTIONS' || originKind(request, listed) !== 'foreign') return;
      return reply
        .status(403)
        .type('application/json')
        .send(jsonRpcError(-32000, `Forbidden: ${foreignOriginMessage(request)}`));
    });
    app.addHook('onSend', async (request, reply) => {
      void reply.headers(originHeaders(request, listed));
    });
    app.setErrorHandler(parseErrors);
    for (const url of PATHS) {
      app.post(url, { bodyLimit }, (request, reply) =>
        handlePost({ services, calls }, request, reply, listed),
      );
      app.get(url, methodNotAllowed);
      app.delete(url, methodNotAllowed);
      app.options(url, (request, reply) => preflight(request, reply, listed));
    }
  };
}

const isMcpPath = (url: string | undefined): boolean => PATHS.some((path) => path === url);

/** `Vary: Origin` always (the answer depends on it); the CORS headers for an allowed origin. */
function originHeaders(request: FastifyRequest, listed: ReadonlySet<string>) {
  const { origin } = request.headers;
  if (origin !== undefined && originKind(request, listed) === 'listed') return corsHeaders(origin);
  return { vary: 'Origin' };
}

function foreignOriginMessage(request: FastifyRequest): string {
  return (
    `Origin ${request.headers.origin ?? ''} may not call this MCP server; its operator can ` +
    'list it in mcp.allowedOrigins'
  );
}

/**
 * A CORS preflight: an allowed origin gets the methods and headers of streamable HTTP; any other
 * origin a 403 without CORS headers, so the browser never sends the request. Without `Origin` it
 * is no preflight, only a question about the methods.
 */
async function preflight(
  request: FastifyRequest,
  reply: FastifyReply,
  listed: ReadonlySet<string>,
) {
  const { origin } = request.headers;
  if (origin === undefined) {
    return reply.status(204).header('allow', 'POST, GET, DELETE, OPTIONS').send();
  }
  if (originKind(request, listed) !== 'listed') {
    return reply
      .status(403)
      .type('application/json')
      .send(jsonRpcError(-32000, `Forbidden: ${foreignOriginMessage(request)}`));
  }
  return reply.status(204).headers(preflightHeaders(origin)).send();
}

/**
 * fastify parses the body before the transport sees it, so a body that is not JSON would get the
 * server's error envelope; an MCP client expects JSON-RPC's Parse error. Other errors go on to
 * the server's own handler (what a handler that throws does in fastify).
 */
function parseErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  if (error.code !== 'FST_ERR_CTP_INVALID_JSON_BODY') throw error;
  return reply
    .status(400)
    .type('application/json')
    .send(jsonRpcError(-32700, 'Parse error: the body is not valid JSON'));
}

async function handlePost(
  { services, calls }: { services: McpServices; calls: InFlightCalls },
  request: FastifyRequest,
  reply: FastifyReply,
  listed: ReadonlySet<string>,
): Promise<void> {
  if (isEmptyBatch(request.body)) {
    await reply
      .status(400)
      .type('application/json')
      .send(jsonRpcError(-32600, 'Invalid Request: an empty batch'));
    return;
  }
  const ctx: ToolContext = {
    identity: requireIdentity(request),
    services,
    log: (level, msg, extra) => request.log[level](extra ?? {}, msg),
    calls,
  };
  // The call it names runs on another POST's server: only the caller's own calls are found.
  for (const { requestId, reason } of cancellations(request.body)) {
    calls.cancel(ctx.identity.userId, requestId, reason);
  }
  const server = buildMcpServer(ctx, VERSION);
  // JSON answers, simpler for any client, unless a call asked for progress: notifications need
  // the response to be an SSE stream, and the transport decides that once, for the whole POST.
  const json = !asksForProgress(request.body);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: json,
  });
  explainSdkErrors(transport);
  // The transport writes the response itself; fastify's onSend and onResponse hooks will not run
  // for it, so the origin's headers go on the raw response, where its writeHead keeps them.
  reply.hijack();
  const res = reply.raw;
  if (json && isBatch(request.body)) answerAsBatch(res);
  for (const [name, value] of Object.entries(originHeaders(request, listed))) {
    res.setHeader(name, value);
  }
  res.on('finish', () => countRequest(services, request, reply));
  res.on('close', () => {
    for (const closing of [transport.close(), server.close()]) {
      closing.catch((err: unknown) => request.log.warn({ err }, 'closing an MCP server failed'));
    }
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request.raw, res, request.body);
  } catch (err) {
    request.log.error({ err }, 'MCP request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(jsonRpcError(-32603, 'Internal error'));
  }
}

/** Whether a JSON-RPC message (or a batch) carries `params._meta.progressToken`. */
export function asksForProgress(body: unknown): boolean {
  if (Array.isArray(body)) return body.some(asksForProgress);
  if (typeof body !== 'object' || body === null) return false;
  const params = (body as { params?: unknown }).params;
  if (typeof params !== 'object' || params === null) return false;
  const meta = (params as { _meta?: unknown })._meta;
  if (typeof meta !== 'object' || meta === null) return false;
  const token = (meta as { progressToken?: unknown }).progressToken;
  return typeof token === 'string' || typeof token === 'number';
}

async function methodNotAllowed(_request: FastifyRequest, reply: FastifyReply) {
  return reply
    .status(405)
    .header('allow', 'POST')
    .type('application/json')
    .send(
      jsonRpcError(
        -32000,
        'Method not allowed: this MCP server is stateless; send each JSON-RPC message with POST',
      ),
    );
}

const jsonRpcError = (code: number, message: string): string =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });

/** What the metrics plugin's onResponse hook does for every other route (it skips hijacked ones). */
function countRequest(services: McpServices, request: FastifyRequest, reply: FastifyReply): void {
  const labels = {
    method: request.method,
    route: request.routeOptions.url ?? 'unmatched',
    status: String(reply.raw.statusCode),
  };
  services.metrics.httpRequests.inc(labels);
  services.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
}
