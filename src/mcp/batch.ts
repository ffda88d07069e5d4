import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** JSON-RPC 2.0 §6: an empty array is no batch but an Invalid Request, answered with one error. */
export const isEmptyBatch = (body: unknown): boolean => Array.isArray(body) && body.length === 0;

export const isBatch = (body: unknown): body is unknown[] => Array.isArray(body) && body.length > 0;

/**
 * JSON-RPC 2.0 §6: the answer to a batch is an array, of one response too. The SDK's transport
 * answers a batch whose requests make one response with that response alone, so its JSON answer
 * to a batch is held here and sent as an array. Only a 200 with a JSON body is rewritten: a 202
 * has none, and an error about the whole batch is one object by the same section.
 */
export function answerAsBatch(res: ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (
    status: number,
    headers?: OutgoingHttpHeaders,
  ) => ServerResponse;
  const end = res.end.bind(res) as (body?: Buffer) => ServerResponse;
  let status = 200;
  let headers: OutgoingHttpHeaders = {};
  const chunks: Buffer[] = [];
  res.writeHead = ((code: number, ...rest: unknown[]) => {
    status = code;
    const given = rest.find((arg) => typeof arg === 'object' && arg !== null);
    headers = { ...(given as OutgoingHttpHeaders | undefined) };
    return res;
  }) as ServerResponse['writeHead'];
  res.write = ((chunk: string | Uint8Array) => {
    chunks.push(Buffer.from(chunk));
    return true;
  }) as ServerResponse['write'];
  res.end = ((chunk?: string | Uint8Array | (() => void)) => {
    if (chunk !== undefined && typeof chunk !== 'function') chunks.push(Buffer.from(chunk));
    const body = asArray(status, Buffer.concat(chunks));
    if (body.length > 0) headers['content-length'] = body.length;
    writeHead(status, headers);
    return end(body.length > 0 ? body : undefined);
  }) as ServerResponse['end'];
}

function asArray(status: number, body: Buffer): Buffer {
  if (status !== 200 || body.length === 0) return body;
  const value: unknown = JSON.parse(body.toString('utf8'));
  return Array.isArray(value) ? body : Buffer.from(JSON.stringify([value]));
}
