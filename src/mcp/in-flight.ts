/**
 * Tool calls still running, so that a `notifications/cancelled` can reach the one it names. The
 * transport is stateless (plugin.ts): the notification comes in its own POST, to a server that
 * never saw the call, so the SDK's own per-server cancel cannot find it. A caller's request ids
 * are its own, not unique across its clients: an id that names two running calls of one caller
 * cancels neither.
 */
export class InFlightCalls {
  private readonly calls = new Map<string, Set<AbortController>>();

  /** A call starts: its signal aborts when the caller cancels it; `done` once it answered. */
  begin(userId: string, requestId: string | number): { signal: AbortSignal; done: () => void } {
    const key = keyOf(userId, requestId);
    const controller = new AbortController();
    const same = this.calls.get(key) ?? new Set<AbortController>();
    same.add(controller);
    this.calls.set(key, same);
    const done = (): void => {
      same.delete(controller);
      if (same.size === 0 && this.calls.get(key) === same) this.calls.delete(key);
    };
    return { signal: controller.signal, done };
  }

  /** True when it cancelled the one call of the caller with that request id. */
  cancel(userId: string, requestId: string | number, reason?: string): boolean {
    const same = this.calls.get(keyOf(userId, requestId));
    if (!same || same.size !== 1) return false;
    for (const controller of same) controller.abort(reason ?? 'cancelled by the client');
    return true;
  }
}

const keyOf = (userId: string, requestId: string | number): string =>
  `${userId}\u0000${typeof requestId}:${String(requestId)}`;

/** The `requestId` and `reason` of every `notifications/cancelled` in a JSON-RPC body or batch. */
export function cancellations(body: unknown): { requestId: string | number; reason?: string }[] {
  if (Array.isArray(body)) return body.flatMap(cancellations);
  if (typeof body !== 'object' || body === null) return [];
  const message = body as { method?: unknown; params?: unknown; id?: unknown };
  if (message.method !== 'notifications/cancelled' || message.id !== undefined) return [];
  if (typeof message.params !== 'object' || message.params === null) return [];
  const { requestId, reason } = message.params as { requestId?: unknown; reason?: unknown };
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return [];
  return [{ requestId, ...(typeof reason === 'string' ? { reason } : {}) }];
}
