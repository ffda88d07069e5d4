/**
 * Follows the HTTP/1.1 exchanges on one relayed connection just closely enough to know, when the
 * control plane behind it goes away, where the visitor stands: between exchanges (its connection
 * can wait for the next control plane), waiting for the answer to a request that is safe to send
 * again (a GET or HEAD without a body: replayed), or somewhere nothing can be saved (mid-answer,
 * an upload, a websocket). Request bodies are not followed: a request with one is never replayed.
 */
export type WhenGone = { kind: 'wait' } | { kind: 'replay'; bytes: Buffer } | { kind: 'close' };

/** Heads and replayable requests larger than this are not followed (64 KiB). */
const MAX_KEPT = 64 * 1024;

type Body =
  | { kind: 'length'; left: number }
  | { kind: 'chunks'; step: 'size' | 'data' | 'crlf' | 'trailer'; left: number; line: string }
  | { kind: 'close' };

export class Exchanges {
  private phase: 'idle' | 'request' | 'response' | 'lost' = 'idle';
  private request: Buffer[] = [];
  private requestBytes = 0;
  private method = '';
  private head = '';
  private body: Body | undefined;
  /** The last answer said `Connection: close`: the visitor expects the connection to end. */
  private closing = false;

  fromClient(chunk: Buffer): void {
    if (this.phase === 'lost') return;
    if (this.phase === 'idle') {
      this.phase = 'request';
      this.request = [];
      this.requestBytes = 0;
      this.method = chunk.subarray(0, 8).toString('latin1').split(' ')[0] ?? '';
    } else if (this.phase === 'response') {
      // Pipelined or sent ahead of an answer: more than this follows.
      this.phase = 'lost';
      return;
    }
    this.requestBytes += chunk.length;
    if (this.requestBytes <= MAX_KEPT) this.request.push(chunk);
  }

  fromServer(chunk: Buffer): void {
    let rest: Buffer | undefined = chunk;
    while (rest && rest.length > 0 && this.phase !== 'lost') {
      this.phase = 'response';
      rest = this.body ? this.readBody(rest) : this.readHead(rest);
    }
  }

  /** What the relay does with the visitor's connection once the control plane's side closed. */
  whenGone(): WhenGone {
    if (this.phase === 'idle' && !this.closing) return { kind: 'wait' };
    const bodiless = this.requestBytes <= MAX_KEPT && endsHead(this.request);
    if (this.phase === 'request' && (this.method === 'GET' || this.method === 'HEAD') && bodiless) {
      return { kind: 'replay', bytes: Buffer.concat(this.request) };
    }
    return { kind: 'close' };
  }

  private readHead(chunk: Buffer): Buffer | undefined {
    const before = this.head.length;
    this.head += chunk.toString('latin1');
    const end = this.head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.head.length > MAX_KEPT) this.phase = 'lost';
      return undefined;
    }
    const head = this.head.slice(0, end);
    this.head = '';
    const rest = chunk.subarray(end + 4 - before);
    const status = Number(head.slice(9, 12));
    const headers = head.toLowerCase();
    if (status === 101) {
      this.phase = 'lost'; // a tunnel from here on
      return undefined;
    }
    if (status >= 100 && status < 200) return rest; // interim: the real answer follows
    this.closing = /\r\nconnection:[^\r]*\bclose\b/.test(headers);
    const length = /\r\ncontent-length:\s*(\d+)/.exec(headers)?.[1];
    if (this.method === 'HEAD' || status === 204 || status === 304) return this.done(rest);
    if (/\r\ntransfer-encoding:[^\r]*\bchunked\b/.test(headers)) {
      this.body = { kind: 'chunks', step: 'size', left: 0, line: '' };
    } else if (length !== undefined) {
      this.body = { kind: 'length', left: Number(length) };
      if (this.body.left === 0) return this.done(rest);
    } else {
      this.body = { kind: 'close' };
    }
    return rest;
  }

  private readBody(chunk: Buffer): Buffer | undefined {
    const body = this.body as Body;
    if (body.kind === 'close') {
      this.closing = true;
      return undefined;
    }
    if (body.kind === 'length') {
      const take = Math.min(body.left, chunk.length);
      body.left -= take;
      return body.left === 0 ? this.done(chunk.subarray(take)) : undefined;
    }
    return this.readChunks(body, chunk);
  }

  private readChunks(body: Extract<Body, { kind: 'chunks' }>, chunk: Buffer): Buffer | undefined {
    let i = 0;
    while (i < chunk.length) {
      if (body.step === 'data') {
        const take = Math.min(body.left, chunk.length - i);
        body.left -= take;
        i += take;
        if (body.left === 0) body.step = 'crlf';
        continue;
      }
      const nl = chunk.indexOf(0x0a, i);
      const piece = chunk.subarray(i, nl < 0 ? chunk.length : nl + 1).toString('latin1');
      i += piece.length;
      body.line += piece;
      if (nl < 0) {
        if (body.line.length > MAX_KEPT) this.phase = 'lost';
        return undefined;
      }
      const line = body.line.trim();
      body.line = '';
      if (body.step === 'crlf') body.step = 'size';
      else if (body.step === 'size') {
        body.left = parseInt(line.split(';')[0] ?? '', 16);
        if (!Number.isFinite(body.left)) {
          this.phase = 'lost';
          return undefined;
        }
        body.step = body.left === 0 ? 'trailer' : 'data';
      } else if (line === '') {
        return this.done(chunk.subarray(i)); // the empty line after the trailer
      }
    }
    return undefined;
  }

  private done(rest: Buffer): Buffer {
    this.body = undefined;
    this.phase = 'idle';
    this.request = [];
    this.requestBytes = 0;
    return rest;
  }
}

/** The kept request is one whole head and nothing after it. */
function endsHead(chunks: Buffer[]): boolean {
  const all = Buffer.concat(chunks);
  const end = all.indexOf('\r\n\r\n');
  return end >= 0 && end + 4 === all.length;
}
