import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { AppRegistry } from '../actors/registry.js';
import type { Identity } from '../auth/identity.js';
import { AppError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { asStorageUnavailable } from '../persistence/storage-faults.js';
import type { AppService } from '../services/app-service.js';
import type { PlatformInfo } from '../services/platform-info.js';
import type { ShareService } from '../services/share-links.js';
import { ERROR_META_KEY, errorSummary, toolError, type ToolError } from './errors.js';
import type { InFlightCalls } from './in-flight.js';
import type { ProgressSink } from './progress.js';
import type { Log } from '../logging.js';

/** What the tools call: the same services the HTTP routes call, nothing of their own. */
export interface McpServices {
  apps: AppService;
  registry: AppRegistry;
  shares: ShareService;
  metrics: Metrics;
  /** What this installation can run: GET /v1/templates, get_platform_info, slipway://platform. */
  platform(): PlatformInfo;
  /** `limits.maxSourceBytes`: the cap of a deploy's source, packed or sent as a tarball. */
  maxSourceBytes: number;
}

/** One request's view: every tool acts as the authenticated caller. */
export interface ToolContext {
  identity: Identity;
  services: McpServices;
  log: Log;
  /** The calls running on every request, which a later `notifications/cancelled` may name. */
  calls: InFlightCalls;
}

/** One tool call: the request's context, and where its progress goes if the caller asked. */
export interface CallContext extends ToolContext {
  /** Set when the call carried `_meta.progressToken`: the response is then an SSE stream. */
  progress?: ProgressSink;
  /** Aborted when the client cancels this call (`notifications/cancelled`): undo what it started. */
  cancelled: AbortSignal;
  /** Aborted when the call is cancelled or its connection is gone: stop waiting. */
  signal: AbortSignal;
}

type Out<O extends z.ZodRawShape> = z.output<z.ZodObject<O>>;

/**
 * A failed call that still has a result in the tool's output shape (a deploy that reached Failed):
 * the client gets `isError` with a one-line summary as text, and the details (logs included, once)
 * as the structured result.
 */
export class ToolFailure<T> {
  constructor(
    readonly error: ToolError,
    readonly structured: T,
  ) {}
}

export interface ToolDef<I extends z.ZodRawShape, O extends z.ZodRawShape> {
  name: string;
  title: string;
  /** What it does, when to use it; fields are described on the schemas themselves. */
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  run(args: Out<I>, ctx: CallContext): Promise<Out<O> | ToolFailure<Out<O>>>;
}

/** A tool with its types erased, ready to register on a per-request server. */
export interface Tool {
  name: string;
  register(server: McpServer, ctx: ToolContext): void;
}

export function defineTool<I extends z.ZodRawShape, O extends z.ZodRawShape>(
  def: ToolDef<I, O>,
): Tool {
  // Built once: a fresh server per request only re-registers them.
  const inputSchema = z.strictObject(def.input);
  const outputSchema = z.object(def.output);
  return {
    name: def.name,
    register(server, ctx) {
      server.registerTool(
        def.name,
        {
          title: def.title,
          description: def.description,
          inputSchema,
          outputSchema,
          annotations: def.annotations,
        },
        // The SDK has parsed the arguments with inputSchema before it calls this.
        async (args: unknown, extra: Extra) => {
          const call = ctx.calls.begin(ctx.identity.userId, extra.requestId);
          // The SDK aborts extra.signal when the connection closes too: a client gone is no
          // cancel, only a reason to stop waiting for it.
          const signal = AbortSignal.any([extra.signal, call.signal]);
          try {
            const progress = progressSink(extra, ctx);
            const calling = { ...ctx, progress, cancelled: call.signal, signal };
            return await invoke(def, args as Out<I>, calling);
          } finally {
            call.done();
          }
        },
      );
    },
  };
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Progress notifications for this call, if it carried a token; sent on the call's SSE stream. */
function progressSink(extra: Extra, ctx: ToolContext): ProgressSink | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  return (update) => {
    const notification = {
      method: 'notifications/progress' as const,
      params: { progressToken, ...update },
    };
    // A client gone mid-deploy is no reason to fail the deploy: the result says how it ended.
    extra.sendNotification(notification).catch((err: unknown) => {
      ctx.log('warn', 'sending an MCP progress notification failed', { err });
    });
  };
}

async function invoke<I extends z.ZodRawShape, O extends z.ZodRawShape>(
  def: ToolDef<I, O>,
  args: Out<I>,
  ctx: CallContext,
): Promise<CallToolResult> {
  const started = performance.now();
  let outcome = 'ok';
  try {
    const result = await def.run(args, ctx);
    if (result instanceof ToolFailure) {
      outcome = result.error.code;
      return errorResult(result.error, result.structured);
    }
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: result,
    };
  } catch (err) {
    const error = toolError(asAppError(err, def.name, ctx), def.name);
    outcome = error.code;
    return errorResult(error);
  } finally {
    const labels = { tool: def.name, outcome };
    ctx.services.metrics.mcpToolCalls.inc(labels);
    ctx.services.metrics.mcpToolDuration.observe(labels, (performance.now() - started) / 1000);
  }
}

/**
 * The summary as text, the error itself in `_meta`. Not in structuredContent unless the tool's
 * output shape holds it: clients (the SDK's own) validate structuredContent against the output
 * schema even on an error.
 */
function errorResult(error: ToolError, structured?: Record<string, unknown>): CallToolResult {
  const result: CallToolResult = {
    isError: true,
    content: [{ type: 'text', text: errorSummary(error) }],
    _meta: { [ERROR_META_KEY]: error },
  };
  if (structured !== undefined) result.structuredContent = structured;
  return result;
}

/**
 * AppErrors are answers; a storage fault is the HTTP API's 503 storage_unavailable; anything else
 * is a bug, logged here and shown as the HTTP API's 500.
 */
function asAppError(err: unknown, tool: string, ctx: ToolContext): AppError {
  if (err instanceof AppError) return err;
  ctx.log('error', 'MCP tool failed', { tool, err });
  return asStorageUnavailable(err) ?? new AppError(500, 'internal', 'internal error');
}
