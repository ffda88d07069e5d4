// The follower vouches for its client's address to the leader with an HMAC under the replicas'
// shared key; nothing a client writes, and nothing signed for another request, verifies.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  FORWARDED_FOR_HEADER,
  FORWARDED_PROOF_HEADER,
  forwardProof,
} from '../../src/cluster/forward-proof.js';

/** The store's meta, shared by the replicas (the configmap backend's one ConfigMap). */
function sharedMeta() {
  const values = new Map<string, string>();
  return {
    getMeta: (key: string) => values.get(key),
    setMeta: (key: string, value: string) => void values.set(key, value),
    values,
  };
}

const message = (init: {
  method?: string;
  url?: string;
  host?: string;
  peer?: string;
  headers?: Record<string, string>;
}): IncomingMessage =>
  ({
    method: init.method ?? 'GET',
    url: init.url ?? '/api/whoami',
    headers: { host: init.host ?? 'slipway.example.com', ...init.headers },
    socket: { remoteAddress: init.peer ?? '10.0.0.7' },
  }) as unknown as IncomingMessage;

/** What the leader receives: the client's request as the follower signed it. */
function handedOn(signed: Record<string, string> | undefined, init = {}) {
  return message({ peer: '10.1.0.2', ...init, headers: { ...signed } });
}

describe('forwardProof', () => {
  it('vouches for the client address under the shared key; the leader reads it back', () => {
    const meta = sharedMeta();
    forwardProof(meta).ensureKey();
    const follower = forwardProof(meta);
    const leader = forwardProof(meta);
    const signed = follower.sign(message({ peer: '10.0.0.7' }), 'replica-b');
    expect(signed?.[FORWARDED_FOR_HEADER]).toBe('10.0.0.7');
    expect(leader.verify(handedOn(signed), 'replica-b')).toBe('10.0.0.7');
    // The key is made once: a second ensureKey keeps it.
    const key = meta.values.get('replica_forward_key');
    forwardProof(meta).ensureKey();
    expect(meta.values.get('replica_forward_key')).toBe(key);
  });

  it('believes nothing without a key, and signs nothing', () => {
    const meta = sharedMeta();
    const proof = forwardProof(meta);
    expect(proof.sign(message({}), 'replica-b')).toBeUndefined();
    expect(
      proof.verify(
        handedOn({ [FORWARDED_FOR_HEADER]: '10.0.0.7', [FORWARDED_PROOF_HEADER]: 'v1.1.AAAA' }),
        'replica-b',
      ),
    ).toBeUndefined();
  });

  it('refuses a proof for another address, method, URL, sender, key or time', () => {
    let clock = 1_000_000;
    const meta = sharedMeta();
    const proof = forwardProof(meta, () => clock);
    proof.ensureKey();
    const signed = proof.sign(message({ method: 'GET', url: '/api/whoami' }), 'replica-b') ?? {};
    const verify = (headers: Record<string, string>, init = {}, by = 'replica-b') =>
      proof.verify(handedOn(headers, init), by);
    expect(verify(signed)).toBe('10.0.0.7');
    expect(verify({ ...signed, [FORWARDED_FOR_HEADER]: '127.0.0.1' })).toBeUndefined();
    expect(verify(signed, { method: 'POST' })).toBeUndefined();
    expect(verify(signed, { url: '/api/users' })).toBeUndefined();
    // Signed for a visit to an app's host: not good for the control plane's.
    expect(verify(signed, { host: 'myapp.apps.example.com' })).toBeUndefined();
    expect(verify(signed, {}, 'replica-c')).toBeUndefined();
    expect(verify({ [FORWARDED_FOR_HEADER]: '10.0.0.7' })).toBeUndefined();
    expect(
      verify({ ...signed, [FORWARDED_PROOF_HEADER]: `${signed[FORWARDED_PROOF_HEADER]}.x` }),
    ).toBeUndefined();
    const other = sharedMeta();
    forwardProof(other).ensureKey();
    expect(forwardProof(other, () => clock).verify(handedOn(signed), 'replica-b')).toBeUndefined();
    clock += 31_000;
    expect(verify(signed)).toBeUndefined();
  });
});
