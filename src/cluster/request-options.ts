import {
  ApiException,
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type ObservableMiddleware,
} from '@kubernetes/client-node';

/** Slipway's field manager for server-side apply: its fields are its own, re-applied as a whole. */
export const FIELD_MANAGER = 'slipway';

/**
 * Per-call options that abort the request after `timeoutMs`: the client has no timeout of its own,
 * and an API server that accepts the connection but never answers would hang the caller. The
 * signal is made when the request is sent, so one options object times each call from its start.
 */
export function timeoutOptions(timeoutMs: number): ConfigurationOptions<ObservableMiddleware> {
  const middleware: ObservableMiddleware = {
    pre: (ctx) => {
      ctx.setSignal(AbortSignal.timeout(timeoutMs));
      return new Observable(Promise.resolve(ctx));
    },
    post: (res) => new Observable(Promise.resolve(res)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** `timeoutOptions` plus the server-side apply content type, for `patch…` calls. */
export function applyOptions(timeoutMs: number): ConfigurationOptions<ObservableMiddleware> {
  return setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, timeoutOptions(timeoutMs));
}

/** The HTTP status of a failed client call (ApiException `.code`), or undefined (network, abort). */
export function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}
