import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

export const ALICE = 'alice-key-0123456789abcdef';
export const BOB = 'bob-key-0123456789abcdef';
export const API_KEYS = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
];

/** The HTTP responses the client transport saw, newest last: status and headers for assertions. */
export interface Seen {
  responses: Array<{ method: string; status: number; headers: Headers }>;
}

/** An official SDK client over streamable HTTP, with an optional bearer token. */
export async function connect(
  baseURL: string,
  token: string | undefined,
  options: { path?: string; seen?: Seen; headers?: Record<string, string> } = {},
): Promise<{ client: Client; seen: Seen }> {
  const seen: Seen = options.seen ?? { responses: [] };
  const recording: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    seen.responses.push({
      method: init?.method ?? 'GET',
      status: response.status,
      headers: response.headers,
    });
    return response;
  };
  const headers: Record<string, string> = { ...options.headers };
  if (token) headers.authorization = `Bearer ${token}`;
  const transport = new StreamableHTTPClientTransport(new URL(options.path ?? '/mcp', baseURL), {
    requestInit: { headers },
    fetch: recording,
  });
  const client = new Client({ name: 'slipway-test', version: '1.0.0' });
  await client.connect(transport);
  // Caches the output schemas, so callTool validates structuredContent against them as it goes.
  await client.listTools();
  return { client, seen };
}

export type ToolResult = CallToolResult;

/** Calls a tool, asserting it succeeded; returns its structuredContent. */
export async function ok(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const result = (await client.callTool({ name, arguments: args })) as ToolResult;
  expect(result.isError, `${name}: ${textOf(result)}`).toBeFalsy();
  expect(result.structuredContent).toBeDefined();
  expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}

/** The error of a failed call, as `_meta["slipway/error"]` carries it (src/mcp/errors.ts). */
export interface ToolErrorBody {
  code: string;
  message: string;
  next_step: string;
  field?: string;
}

/**
 * Calls a tool, asserting it failed the way every tool error must: a one-line summary as text
 * that says what to do next, in the tool's own words (no HTTP `metadata.` fields, no
 * `status_url`); returns the error and the raw result.
 */
export async function fails(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ error: ToolErrorBody; result: ToolResult }> {
  const result = (await client.callTool({ name, arguments: args })) as ToolResult;
  expect(result.isError, `${name} should fail: ${textOf(result)}`).toBe(true);
  const error = result._meta?.['slipway/error'] as ToolErrorBody;
  expect(error).toMatchObject({
    code: expect.any(String),
    message: expect.any(String),
    next_step: expect.stringMatching(/\S/),
  });
  const text = textOf(result);
  expect(text).toBe(`${error.message}: ${error.next_step}`);
  expect(text).not.toContain('\n');
  const everything = JSON.stringify(result);
  expect(everything).not.toMatch(/metadata\.|status_url/);
  return { error, result };
}

export function textOf(result: ToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

/** A small node app spread over several files: entry, a module, a JSON file and a base64 asset. */
export function nodeAppFiles(greeting: string): Record<string, unknown> {
  return {
    'package.json': JSON.stringify({ name: 'multi', main: 'src/server.js' }),
    'src/server.js': [
      "const { createServer } = require('node:http');",
      "const { greet } = require('./lib/greet.js');",
      "const data = require('../data/config.json');",
      "const logo = require('node:fs').readFileSync(require('node:path').join(__dirname, '../logo.bin'));",
      "console.log('multi app booting');",
      'createServer((req, res) => {',
      "  if (req.url === '/logo') return res.end(logo.toString('hex'));",
      "  res.end(greet(data.who) + '\\n');",
      '}).listen(Number(process.env.PORT));',
    ].join('\n'),
    'src/lib/greet.js': `exports.greet = (who) => '${greeting}, ' + who;`,
    'data/config.json': { content: JSON.stringify({ who: 'agent' }), encoding: 'utf8' },
    'logo.bin': {
      content: Buffer.from([0xca, 0xfe, 0xba, 0xbe]).toString('base64'),
      encoding: 'base64',
    },
  };
}
