import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { AppRegistry } from '../actors/registry.js';
import type { Identity } from '../auth/identity.js';
import { AppError, type ErrorBody } from '../errors.js';
import type { Metrics } from '../http/metrics.js';
import type { AppService } from '../services/app-service.js';
import type { ShareService } from '../services/share-links.js';

/** What the tools call: the same services the HTTP routes call, nothing of their own. */
export interface McpServices {
  apps: AppService;
  registry: AppRegistry;
  shares: ShareService;
  metrics: Metrics;
  /** `limits.maxSourceBytes`: the cap of a deploy's source, packed or sent as a tarball. */
  maxSourceBytes: number;
}

/** One request's view: every tool acts as the authenticated caller. */
export interface ToolContext {
  identity: Identity;
  services: McpServices;
  log: (level: 'warn' | 'error', msg: string, extra?: object) => void;
}

type Out<O extends z.ZodRawShape> = z.output<z.ZodObject<O>>;

/**
 * A failed call that still has a result in the tool's output shape (a deploy that reached Failed):
 * the client gets `isError` with the error body as text, and the structured result beside it.
 */
export class ToolFailure<T> {
  constructor(
    readonly error: AppError,
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
  run(args: Out<I>, ctx: ToolContext): Promise<Out<O> | ToolFailure<Out<O>>>;
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
        (args: unknown) => invoke(def, args as Out<I>, ctx),
      );
    },
  };
}

async function invoke<I extends z.ZodRawShape, O extends z.ZodRawShape>(
  def: ToolDef<I, O>,
  args: Out<I>,
  ctx: ToolContext,
): Promise<CallToolResult> {
  const started = performance.now();
  let outcome = 'ok';
  try {
    const result = await def.run(args, ctx);
    if (result instanceof ToolFailure) {
      outcome = result.error.code;
      return errorResult(result.error.toBody(), result.structured);
    }
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: result,
    };
  } catch (err) {
    const error = asAppError(err, def.name, ctx);
    outcome = error.code;
    return errorResult(error.toBody());
  } finally {
    const labels = { tool: def.name, outcome };
    ctx.services.metrics.mcpToolCalls.inc(labels);
    ctx.services.metrics.mcpToolDuration.observe(labels, (performance.now() - started) / 1000);
  }
}

/**
 * The HTTP error body, as JSON text. Not in structuredContent: clients (the SDK's own) validate
 * structuredContent against the output schema even on an error, and an error body is not that shape.
 */
function errorResult(body: ErrorBody, structured?: Record<string, unknown>): CallToolResult {
  const result: CallToolResult = {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(body) }],
  };
  if (structured !== undefined) result.structuredContent = structured;
  return result;
}

/** AppErrors are answers; anything else is a bug, logged here and shown as the HTTP API's 500. */
function asAppError(err: unknown, tool: string, ctx: ToolContext): AppError {
  if (err instanceof AppError) return err;
  ctx.log('error', 'MCP tool failed', { tool, err });
  return new AppError(500, 'internal', 'internal error');
}
