import { LinkPace } from './link-pace.js';
import {
  AttemptLimiter,
  DEFAULT_LIMITER_POLICY,
  type Attempt,
  tooMany,
  type LimiterPolicy,
} from './share-limiter.js';

/** Per link and client: a few wrong guesses, then that client waits (design.md §6). */
export const PER_CLIENT_POLICY: LimiterPolicy = DEFAULT_LIMITER_POLICY;

/**
 * Password guesses on share links. Per link and client address: a few wrong guesses, then that
 * address is locked out of that link, so one address's guesses cannot lock anyone else out. Per
 * link: once many addresses guessed wrong (LinkPace), the link is under attack; then an address
 * that already guessed wrong on it gets no more guesses, and new addresses' guesses are checked one
 * at a time, a little apart. Guessing slows down; the right password from a new visitor still works.
 */
export class GuessLimiter {
  private readonly perClient: AttemptLimiter;
  private readonly perLink: LinkPace;

  constructor(now: () => number = Date.now, perLink?: LinkPace) {
    this.perClient = new AttemptLimiter(PER_CLIENT_POLICY, now);
    this.perLink = perLink ?? new LinkPace(undefined, now);
  }

  /** Reserves a guess, waiting its turn on a link under attack, or throws 429 `too_many_attempts`. */
  async begin(token: string, client: string): Promise<Attempt> {
    const key = `${token} ${clientKey(client)}`;
    if (this.perLink.hot(token) && this.perClient.spent(key) > 0) {
      throw tooMany(this.perLink.hotForMs(token));
    }
    const pair = this.perClient.begin(key);
    try {
      await this.perLink.turn(token);
    } catch (err) {
      pair.abandon();
      throw err;
    }
    return {
      succeeded: () => pair.succeeded(),
      failed: () => (pair.failed(), this.perLink.failed(token)),
      abandon: () => pair.abandon(),
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
