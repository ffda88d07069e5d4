import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import { requireIdentity } from '../auth/guards.js';
import { loopbackHostValues } from '../http/host-guard.js';
import { buildMcpServer } from './mcp-server.js';
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
 */
export function mcpRoutes(services: McpServices) {
  // A deploy may carry its source as base64: room for the largest allowed source, plus the rest.
  const bodyLimit = Math.ceil(services.maxSourceBytes / 3) * 4 + 1024 * 1024;
  return async function routes(app: FastifyInstance): Promise<void> {
    for (const url of PATHS) {
      app.post(url, { bodyLimit }, (request, reply) => handlePost(services, request, reply));
      app.get(url, methodNotAllowed);
      app.delete(url, methodNotAllowed);
    }
  };
}

async function handlePost(
  services: McpServices,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const ctx: ToolContext = {
    identity: requireIdentity(request),
    services,
    log: (level, msg, extra) => request.log[level](extra ?? {}, msg),
  };
  const server = buildMcpServer(ctx, VERSION);
  // JSON answers, simpler for any client, unless a call asked for progress: notifications need
  // the response to be an SSE stream, and the transport decides that once, for the whole POST.
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !asksForProgress(request.body),
    ...rebindingProtection(request),
  });
  explainSdkErrors(transport);
  // The transport writes the response itself; fastify's onResponse hooks will not run for it.
  reply.hijack();
  const res = reply.raw;
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

/**
 * Without auth, the SDK's own DNS-rebinding check as well as the host guard (host-guard.ts): only
 * the loopback names at our port, and the configured base URL's host, may address /mcp.
 */
function rebindingProtection(request: FastifyRequest) {
  if (request.server.auth.enabled) return {};
  const address = request.server.server.address();
  if (address === null || typeof address === 'string') return {};
  const hosts = loopbackHostValues(address.port);
  const base = request.server.config.server.baseURL;
  if (base) hosts.push(new URL(base).host);
  const origins = hosts.flatMap((host) => [`http://${host}`, `https://${host}`]);
  return { enableDnsRebindingProtection: true, allowedHosts: hosts, allowedOrigins: origins };
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
