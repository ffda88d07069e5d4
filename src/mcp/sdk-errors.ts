import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ERROR_META_KEY, errorSummary, type ToolError } from './errors.js';

/**
 * The SDK answers some tool calls itself, before any tool runs: arguments outside the input schema,
 * an unknown tool. Its error results are a bare message (`MCP error -32602: Input validation
 * error: ...`) formatted in a private method, so they are given the same shape as every other tool
 * error on their way out: a one-line summary with a next step, and the error in `_meta`.
 */
export function explainSdkErrors(transport: Transport): void {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => send(withNextStep(message), options);
}

export function withNextStep(message: JSONRPCMessage): JSONRPCMessage {
  if (!('result' in message)) return message;
  const result = message.result;
  const meta = result._meta ?? {};
  if (result.isError !== true || meta[ERROR_META_KEY] !== undefined) return message;
  const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const first = content[0] as { type?: unknown; text?: unknown } | undefined;
  const text = typeof first?.text === 'string' ? first.text : '';
  const error = sdkError(text);
  return {
    ...message,
    result: {
      ...result,
      content: [{ type: 'text', text: errorSummary(error) }],
      _meta: { ...meta, [ERROR_META_KEY]: error },
    },
  };
}

const INVALID = /Invalid arguments for tool (\S+): ([\s\S]*)$/;
const UNKNOWN = /Tool (\S+) not found/;

function sdkError(text: string): ToolError {
  const invalid = INVALID.exec(text);
  if (invalid) {
    const [, tool = '', problems = ''] = invalid;
    const lines = problems.split('\n');
    const error: ToolError = {
      code: 'invalid_arguments',
      message: `invalid arguments for ${tool}: ${lines.join('; ')}`,
      next_step: `fix them to match the input schema of ${tool} (tools/list shows it) and call it again`,
    };
    // One problem at one argument: name it, as the tools' own errors do.
    const at = lines.length === 1 ? /^(.*) at (\S+)$/.exec(lines[0] ?? '') : null;
    const [, problem = '', field] = at ?? [];
    if (field === undefined) return error;
    error.field = field;
    // A rule the schema words itself (`name must be ...`) reads as the tools' own errors do.
    if (problem.startsWith(`${field} `)) {
      error.message = problem;
      error.next_step = `fix ${field} and call ${tool} again`;
    }
    return error;
  }
  const unknown = UNKNOWN.exec(text);
  if (unknown) {
    return {
      code: 'unknown_tool',
      message: `there is no tool ${unknown[1] ?? ''}`,
      next_step: 'tools/list shows the tools of this server',
    };
  }
  return {
    code: 'internal',
    message: text.replace(/^MCP error -?\d+: /, '') || 'the call failed',
    next_step: 'try again; if it keeps failing, tell the operator of this server',
  };
}
