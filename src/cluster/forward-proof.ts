import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Store } from '../persistence/store.js';

/** Marks a request one replica handed to another: it is never handed on again. */
export const FORWARDED_HEADER = 'x-slipway-forwarded-by';
/** The client address a follower vouches for on a request it hands to the leader. */
export const FORWARDED_FOR_HEADER = 'x-slipway-forwarded-for';
/** `v1.<ms since epoch>.<HMAC-SHA256, base64url>` over the forward's facts (see `message`). */
export const FORWARDED_PROOF_HEADER = 'x-slipway-forwarded-proof';

/** What only replicas say to each other: stripped from every request an app receives. */
export const REPLICA_HEADERS = [FORWARDED_HEADER, FORWARDED_FOR_HEADER, FORWARDED_PROOF_HEADER];

/** The replicas' shared key, kept in the store (the configmap backend: one ConfigMap they read). */
const FORWARD_KEY = 'replica_forward_key';
/** How far a proof's time may lie from the leader's clock (two pods' clocks, and the trip). */
const MAX_SKEW_MS = 30_000;

export interface ForwardProof {
  /** Makes the key when the store holds none: the leader does, as it takes the Lease. */
  ensureKey(): void;
  /**
   * The headers a follower adds to `req`, handed on by replica `by`, vouching for the address it
   * came from; undefined while this replica has not seen the key yet (the leader then trusts
   * nothing the request claims).
   */
  sign(req: IncomingMessage, by: string): Record<string, string> | undefined;
  /**
   * The client address a request handed on by another replica (`by`) came from, when its proof
   * verifies: signed with the key, for this method, host, URL and sender, and recent. Otherwise
   * undefined: the address is unknown, and trusted for nothing.
   */
  verify(req: IncomingMessage, by: string): string | undefined;
}

/**
 * What lets the leader apply its own trust rules (e.g. `auth.oauth.trustedProxies`) to the client
 * a follower served, not to the follower: an HMAC with a key only the replicas read from the store,
 * over the method, the host and URL, the forwarding replica, the client's address and the time. A client
 * cannot make one, so a client's own `X-Slipway-Forwarded-*` headers never verify.
 */
export function forwardProof(
  meta: Pick<Store, 'getMeta' | 'setMeta'>,
  now: () => number = Date.now,
): ForwardProof {
  let held: { hex: string; key: Buffer } | undefined;
  // Read each time (the store's mirror): a key another replica wrote over ours is followed.
  const current = (): Buffer | undefined => {
    const stored = meta.getMeta(FORWARD_KEY);
    if (!stored) return undefined;
    if (held?.hex !== stored) held = { hex: stored, key: Buffer.from(stored, 'hex') };
    return held.key;
  };
  const mac = (secret: Buffer, req: IncomingMessage, by: string, client: string, at: string) =>
    createHmac('sha256', secret)
      .update(
        ['v1', by, req.method ?? '', req.headers.host ?? '', req.url ?? '', client, at].join('\n'),
      )
      .digest();
  return {
    ensureKey() {
      if (current()) return;
      meta.setMeta(FORWARD_KEY, randomBytes(32).toString('hex'));
    },
    sign(req, by) {
      const secret = current();
      const client = req.socket.remoteAddress;
      if (!secret || !client) return undefined;
      const at = String(now());
      const signature = mac(secret, req, by, client, at).toString('base64url');
      return { [FORWARDED_FOR_HEADER]: client, [FORWARDED_PROOF_HEADER]: `v1.${at}.${signature}` };
    },
    verify(req, by) {
      const secret = current();
      const client = req.headers[FORWARDED_FOR_HEADER];
      const proof = req.headers[FORWARDED_PROOF_HEADER];
      if (!secret || typeof client !== 'string' || typeof proof !== 'string') return undefined;
      const [version, at, signature, extra] = proof.split('.');
      if (version !== 'v1' || !at || !signature || extra !== undefined) return undefined;
      if (!/^\d{1,15}$/.test(at) || Math.abs(now() - Number(at)) > MAX_SKEW_MS) return undefined;
      const given = Buffer.from(signature, 'base64url');
      const expected = mac(secret, req, by, client, at);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return client;
    },
  };
}
