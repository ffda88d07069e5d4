/**
 * A minimal SSE client over fetch streaming, for tests that must see every frame as sent: comments
 * (heartbeats), `event: error` frames, and the server ending the stream. (The `eventsource`
 * package hides those and reconnects on its own; tests use it where a browser-like client fits.)
 */
export interface SseFrame {
  event?: string;
  /** On log streams: the version the line belongs to. */
  id?: string;
  data?: string;
  comment?: string;
}

export class SseClient {
  readonly frames: SseFrame[] = [];
  /** Resolves when the server ends the stream (not when we close it). */
  readonly ended: Promise<void>;
  private readonly waiters = new Set<() => void>();
  private finished = false;
  /** Set when the connection broke instead of ending cleanly. */
  failure: unknown;

  private constructor(
    readonly status: number,
    readonly headers: Headers,
    /** The JSON body of a non-200 answer. */
    readonly body: unknown,
    private readonly abort: AbortController,
    stream: ReadableStream<Uint8Array> | null,
  ) {
    this.ended = stream ? this.read(stream) : Promise.resolve();
  }

  static async open(
    url: string,
    token?: string,
    extra: Record<string, string> = {},
  ): Promise<SseClient> {
    const abort = new AbortController();
    const headers: Record<string, string> = { accept: 'text/event-stream', ...extra };
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(url, { headers, signal: abort.signal });
    if (res.status !== 200) {
      const text = await res.text();
      return new SseClient(
        res.status,
        res.headers,
        text ? JSON.parse(text) : undefined,
        abort,
        null,
      );
    }
    return new SseClient(res.status, res.headers, undefined, abort, res.body);
  }

  /** Data of the unnamed events (log lines), in order. */
  get lines(): string[] {
    return this.frames
      .filter((f) => f.event === undefined && f.data !== undefined)
      .map((f) => f.data ?? '');
  }

  /**
   * Waits until a frame matches. The deadline only keeps a broken server from hanging the test; it
   * is never what a test asserts.
   */
  async waitFor(match: (frame: SseFrame) => boolean, what: string, ms = 20_000): Promise<SseFrame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (this.finished)
        throw new Error(`stream ended without ${what}: ${JSON.stringify(this.frames)}`);
      if (Date.now() > deadline)
        throw new Error(`no ${what} within ${ms} ms: ${JSON.stringify(this.frames)}`);
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.waiters.delete(wake);
          resolve();
        };
        this.waiters.add(wake);
        setTimeout(wake, 100);
      });
    }
  }

  close(): void {
    this.abort.abort();
  }

  private async read(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    const reader = stream.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          this.frames.push(parse(buffer.slice(0, at)));
          buffer = buffer.slice(at + 2);
          for (const wake of [...this.waiters]) wake();
        }
      }
    } catch (err) {
      // Our own close() aborts the read; anything else (the server cut the connection) is kept
      // for the test to look at, never thrown into the void of an unawaited promise.
      if (!this.abort.signal.aborted) this.failure = err;
    } finally {
      this.finished = true;
      for (const wake of [...this.waiters]) wake();
    }
  }
}

function parse(block: string): SseFrame {
  const frame: SseFrame = {};
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim();
    else if (line.startsWith('event: ')) frame.event = line.slice(7);
    else if (line.startsWith('id: ')) frame.id = line.slice(4);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  if (data.length > 0) frame.data = data.join('\n');
  return frame;
}
