import {
  AttemptLimiter,
  DEFAULT_LIMITER_POLICY,
  type Attempt,
  type LimiterPolicy,
} from './share-limiter.js';

/** Per link and client: a few wrong guesses, then that client waits (design.md §6). */
export const PER_CLIENT_POLICY: LimiterPolicy = DEFAULT_LIMITER_POLICY;

/**
 * Per link, whoever guesses: far above what one client may try, so only a guesser spread over many
 * addresses reaches it, and it still stops that guesser (at the price of locking the link for all).
 */
export const PER_LINK_POLICY: LimiterPolicy = { ...DEFAULT_LIMITER_POLICY, maxFailures: 100 };

/**
 * Password guesses on share links, counted per link AND client address, so that one address's wrong
 * guesses cannot lock the owner (or anyone else) out of a link; plus a per-link ceiling. Both
 * limiters keep a bounded number of entries; links are few (owners create them), clients are not,
 * so they are kept apart: a flood of addresses cannot evict a link's ceiling.
 */
export class GuessLimiter {
  private readonly perClient: AttemptLimiter;
  private readonly perLink: AttemptLimiter;

  constructor(now: () => number = Date.now) {
    this.perClient = new AttemptLimiter(PER_CLIENT_POLICY, now);
    this.perLink = new AttemptLimiter(PER_LINK_POLICY, now);
  }

  /** Reserves a guess, or throws 429 `too_many_attempts` (this client's limit first). */
  begin(token: string, client: string): Attempt {
    const pair = this.perClient.begin(`${token} ${clientKey(client)}`);
    let link: Attempt;
    try {
      link = this.perLink.begin(token);
    } catch (err) {
      pair.abandon();
      throw err;
    }
    return {
      succeeded: () => (pair.succeeded(), link.succeeded()),
      failed: () => (pair.failed(), link.failed()),
      abandon: () => (pair.abandon(), link.abandon()),
    };
  }

  /** A revoked link: nothing about it matters any more. */
  forget(token: string): void {
    this.perLink.forget(token);
    this.perClient.forgetPrefix(`${token} `);
  }
}

/**
 * The unit a client is counted as: an IPv4 address, or an IPv6 /64 (one host usually holds a whole
 * /64, so counting single IPv6 addresses would let it dodge the per-client limit).
 */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (!address.includes(':')) return address;
  const plain = address.split('%')[0] ?? address;
  const [head = '', tail] = plain.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  const prefix = groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''));
  return `${prefix.join(':')}::/64`;
}
