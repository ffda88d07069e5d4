/**
 * Checks every response a test server sends against api/openapi.yaml: the status is documented for
 * the operation, the content type is one it names, and a JSON body (or each `event:` frame of a
 * documented SSE stream) validates against its schema with JSON Schema 2020-12 semantics (OpenAPI
 * 3.1). Violations are collected; the test harness fails the test when its server saw any.
 *
 * Skipped, because the spec cannot or does not describe them:
 * - requests to an app host (`<name>.<apps domain>`) or any host that is not an IP literal or
 *   `localhost`: they are the apps' answers, or the foreign-host refusal of a rebinding test;
 * - successes of paths no operation matches (Swagger UI's assets); their errors (the 404 of an
 *   unknown path, the 405 of a method a known path does not take, which the API description
 *   documents once for all paths) are checked against the `Error` envelope;
 * - the HTML share page `/share/{token}` (not an API operation; its errors are pages too);
 * - HEAD bodies (there are none) and WebSocket upgrades (not an HTTP response);
 * - bodies of non-JSON media types (HTML share page, Swagger UI, YAML, tarballs, metrics): only
 *   their status and content type are checked.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  HTTP_METHODS,
  isObject,
  loadSpec,
  resolvePointer,
  type Json,
  type JsonObject,
} from '../contract/openapi-doc.js';

// ajv-formats is CommonJS whose default export is the function itself under ESM interop.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export interface Violation {
  method: string;
  path: string;
  status: number;
  problem: string;
}

export interface SeenResponse {
  method: string;
  /** The request path with its query string. */
  url: string;
  status: number;
  contentType: string | undefined;
  body: Buffer;
  /** The body went past the capture limit: only its head is here. */
  truncated?: boolean;
}

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  pointer: string;
  /** Templates without parameters win over templated ones (`/mcp/` before `/{x}`). */
  literal: number;
}

const SPEC_ID = 'openapi.json';
/** Stream bodies kept for frame validation; past this the rest of a stream is not checked. */
const MAX_CAPTURE = 1024 * 1024;

const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

export class ResponseValidator {
  private readonly spec: JsonObject;
  private readonly ajv: Ajv2020;
  private readonly routes: Route[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly violations: Violation[] = [];
  /** Responses checked (not skipped), so a test can tell the validator saw traffic. */
  checked = 0;

  constructor(spec: JsonObject = loadSpec()) {
    this.spec = spec;
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.ajv);
    // OpenAPI's own formats for binary content: bodies, never JSON values, so anything goes.
    this.ajv.addFormat('binary', true);
    this.ajv.addSchema(spec as object, SPEC_ID);
    const paths = isObject(spec.paths) ? spec.paths : {};
    for (const [template, item] of Object.entries(paths)) {
      if (!isObject(item)) continue;
      for (const method of HTTP_METHODS) {
        if (!isObject(item[method])) continue;
        const source = template
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
          .join('[^/]+');
        this.routes.push({
          method: method.toUpperCase(),
          template,
          pattern: new RegExp(`^${source}$`),
          pointer: `#/paths/${escapePointer(template)}/${method}`,
          literal: template.includes('{') ? 0 : 1,
        });
      }
    }
    this.routes.sort((a, b) => b.literal - a.literal);
  }

  /** A validator with its own violations that shares this one's compiled schemas. */
  fresh(): ResponseValidator {
    const copy = Object.create(ResponseValidator.prototype) as ResponseValidator;
    return Object.assign(copy, { ...this, violations: [], checked: 0 });
  }

  /** Validates one response; returns the violations it added (none when it was skipped). */
  check(seen: SeenResponse): Violation[] {
    const path = seen.url.split('?')[0] ?? seen.url;
    const method = seen.method.toUpperCase();
    const route = this.routes.find((r) => r.method === method && r.pattern.test(path));
    if (method === 'HEAD') return [];
    if (!route) return this.checkUnrouted(method, path, seen);
    this.checked++;
    const found: Violation[] = [];
    const fail = (problem: string): void => {
      found.push({ method, path: route.template, status: seen.status, problem });
    };
    const responses = this.at(`${route.pointer}/responses`);
    if (!isObject(responses)) return [];
    const key = [String(seen.status), `${String(seen.status)[0]}XX`, 'default'].find(
      (k) => responses[k] !== undefined,
    );
    if (key === undefined) {
      fail(`status ${seen.status} is not documented (body: ${preview(seen.body)})`);
      this.violations.push(...found);
      return found;
    }
    const { node: response, pointer } = this.follow(`${route.pointer}/responses/${key}`);
    const content = isObject(response) && isObject(response.content) ? response.content : {};
    const mediaTypes = Object.keys(content);
    const type = (seen.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (seen.body.length === 0) {
      // A stream may end before its first frame (no log lines yet, the client gone at once).
      const mayBeEmpty = seen.status === 204 || type === 'text/event-stream';
      if (mediaTypes.length > 0 && !mayBeEmpty) fail('empty body; the spec documents one');
      this.violations.push(...found);
      return found;
    }
    if (mediaTypes.length === 0) {
      fail(`a ${type || 'untyped'} body where the spec documents none: ${preview(seen.body)}`);
    } else if (!mediaTypes.includes(type)) {
      fail(`content type ${type || '(none)'} is not one of ${mediaTypes.join(', ')}`);
    } else if (type === 'application/json' && !seen.truncated) {
      this.validateJson(`${pointer}/content/${escapePointer(type)}/schema`, seen.body, fail);
    } else if (type === 'text/event-stream') {
      this.validateFrames(route.pointer, seen.body, fail);
    }
    this.violations.push(...found);
    return found;
  }

  /**
   * A request no operation names: the API description promises a 405 with `Allow` for another
   * method of a known path and the error envelope for any refusal; what else an unknown path
   * answers (Swagger UI's assets) the spec does not describe.
   */
  private checkUnrouted(method: string, path: string, seen: SeenResponse): Violation[] {
    // The share page answers its errors as HTML pages, for the browsers it is for.
    if (seen.status < 400 || path.startsWith('/share/')) return [];
    const known = this.routes.find((r) => r.pattern.test(path));
    this.checked++;
    const found: Violation[] = [];
    const fail = (problem: string): void => {
      found.push({ method, path: known?.template ?? path, status: seen.status, problem });
    };
    const type = (seen.contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (known && seen.status !== 405) {
      fail(`${method} is not an operation of ${known.template}, so it must be 405`);
    } else if (type !== 'application/json') {
      fail(`an error answered as ${type || 'untyped'}, not the JSON error envelope`);
    } else {
      this.validateJson('#/components/schemas/Error', seen.body, fail);
    }
    this.violations.push(...found);
    return found;
  }

  private validateJson(pointer: string, body: Buffer, fail: (problem: string) => void): void {
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch (err) {
      fail(`body is not JSON (${(err as Error).message}): ${preview(body)}`);
      return;
    }
    this.validateValue(pointer, value, fail);
  }

  private validateValue(pointer: string, value: unknown, fail: (problem: string) => void): void {
    if (this.at(pointer) === undefined) return;
    const validate = this.schema(pointer);
    if (!validate(value)) {
      fail(
        `${describeErrors(validate.errors)}; body: ${preview(Buffer.from(JSON.stringify(value)))}`,
      );
    }
  }

  /**
   * An SSE body is checked frame by frame against the operation's `x-slipway-events` map (event
   * name → schema; `message` for frames without a name). Frames of unnamed events are checked only
   * when the map names `message`.
   */
  private validateFrames(opPointer: string, body: Buffer, fail: (problem: string) => void): void {
    const events = this.at(`${opPointer}/x-slipway-events`);
    if (!isObject(events)) return;
    const text = body.toString('utf8');
    // The last frame may be cut off by the capture limit or by a stream still open: drop it.
    const frames = text.split(/\r?\n\r?\n/).slice(0, -1);
    for (const frame of frames) {
      let event = 'message';
      const data: string[] = [];
      for (const line of frame.split(/\r?\n/)) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        if (field === 'data') data.push(value);
      }
      if (data.length === 0) continue;
      if (events[event] === undefined) {
        fail(`SSE event '${event}' is not documented in x-slipway-events`);
        continue;
      }
      const { node: schema, pointer } = this.follow(
        `${opPointer}/x-slipway-events/${escapePointer(event)}`,
      );
      const joined = data.join('\n');
      if (isObject(schema) && schema.contentMediaType === 'application/json') {
        // A frame whose data is JSON text: its contentSchema describes the parsed value.
        let value: unknown;
        try {
          value = JSON.parse(joined);
        } catch (err) {
          fail(
            `SSE '${event}' data is not JSON (${(err as Error).message}): ${joined.slice(0, 200)}`,
          );
          continue;
        }
        this.validateValue(`${pointer}/contentSchema`, value, fail);
      } else {
        this.validateValue(pointer, joined, fail);
      }
    }
  }

  /** Compiles (once) the schema at a pointer of the spec, so its `$ref`s resolve in the spec. */
  private schema(pointer: string): ValidateFunction {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${SPEC_ID}${pointer}` });
      this.compiled.set(pointer, validate);
    }
    return validate;
  }

  private at(pointer: string): Json | undefined {
    return resolvePointer(this.spec, pointer);
  }

  /** Follows a response object's `$ref`s, keeping the pointer of where it ends. */
  private follow(pointer: string): { node: Json | undefined; pointer: string } {
    let current = pointer;
    let node = this.at(current);
    for (let hops = 0; isObject(node) && typeof node.$ref === 'string' && hops < 10; hops++) {
      current = node.$ref;
      node = this.at(current);
    }
    return { node, pointer: current };
  }
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  if (!errors?.length) return 'invalid';
  return errors
    .slice(0, 5)
    .map(
      (e) => `${e.instancePath || '(root)'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`,
    )
    .join('; ');
}

function preview(body: Buffer): string {
  const text = body.toString('utf8', 0, Math.min(body.length, 300));
  return body.length > 300 ? `${text}…` : text;
}

/** True for a Host the control plane answers as itself: an IP literal or `localhost`. */
function isControlPlaneHost(host: string | undefined): boolean {
  if (!host) return true;
  const name = host
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  return name === 'localhost' || /^[\d.]+$/.test(name) || name.includes(':');
}

/**
 * Watches every response of a node HTTP server: our `request` listener runs before fastify's and
 * wraps `write`/`end` to keep the body, then checks it when the response finishes. Returns a
 * function that stops watching.
 */
export function watchServer(server: Server, validator: ResponseValidator): () => void {
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    if (!isControlPlaneHost(req.headers.host) || req.headers.upgrade) return;
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      if (size >= MAX_CAPTURE) return;
      const buf = Buffer.isBuffer(chunk)
        ? chunk
        : typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : Buffer.from(chunk as Uint8Array);
      chunks.push(buf);
      size += buf.length;
    };
    let headType: string | undefined;
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
    res.writeHead = ((...args: unknown[]) => {
      // Headers handed to writeHead are not readable with getHeader afterwards.
      headType = contentTypeOf(args.find((a) => typeof a === 'object' && a !== null));
      return writeHead(...args);
    }) as ServerResponse['writeHead'];
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return write(...args);
    }) as ServerResponse['write'];
    res.end = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return end(...args);
    }) as ServerResponse['end'];
    res.on('close', () => {
      // A response the client or the server cut before its headers went out was never seen.
      if (!res.headersSent) return;
      const type = res.getHeader('content-type');
      validator.check({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        status: res.statusCode,
        contentType: type === undefined ? headType : String(type),
        body: Buffer.concat(chunks),
        truncated: size >= MAX_CAPTURE,
      });
    });
  };
  server.prependListener('request', onRequest);
  return () => server.off('request', onRequest);
}

/** The content type among writeHead's headers (an object, or a flat [name, value, ...] array). */
function contentTypeOf(headers: unknown): string | undefined {
  if (Array.isArray(headers)) {
    const flat = headers.flat() as unknown[];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      if (String(flat[i]).toLowerCase() === 'content-type') return String(flat[i + 1]);
    }
    return undefined;
  }
  if (typeof headers !== 'object' || headers === null) return undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'content-type') return String(value);
  }
  return undefined;
}

export function formatViolations(violations: Violation[]): string {
  return violations.map((v) => `  ${v.method} ${v.path} → ${v.status}: ${v.problem}`).join('\n');
}
