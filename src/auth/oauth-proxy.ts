import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../config/load.js';
import { unauthenticated } from '../errors.js';
import type { AuthMode, AuthModeFactory } from './auth-mode.js';
import { checkUserId } from './user-id.js';

/**
 * Trusted proxy: a gateway in front of Slipway validated the caller and names it in a header
 * (`X-Forwarded-User`). The header is believed only from a socket peer in `auth.oauth.trustedProxies`
 * (through a follower replica: from the client it vouches for, see forward-proof.ts).
 * With `auth.oauth.adminGroup` set, the proxy's groups header grants the admin role.
 */
export const oauthProxyMode: AuthModeFactory = {
  name: 'oauth',
  create: ({ config, clientAddress }): AuthMode => {
    const trusted = trustedProxies(config.auth.oauth.trustedProxies);
    const header = config.auth.oauth.userHeader.toLowerCase();
    const groupsHeader = config.auth.oauth.groupsHeader.toLowerCase();
    const { adminGroup } = config.auth.oauth;
    return {
      name: 'oauth',
      verify: ({ request }) => {
        // The socket peer (or the one a follower replica vouches for), never X-Forwarded-For:
        // that header is whatever the caller wrote.
        const peer = clientAddress(request.raw);
        if (!peer || !isTrusted(trusted, peer)) {
          throw unauthenticated('request did not come through a trusted proxy');
        }
        const value = request.headers[header];
        if (typeof value !== 'string' || value.trim() === '') {
          throw unauthenticated(`the proxy did not send ${header}`);
        }
        const userId = value.trim();
        checkUserId(userId);
        if (adminGroup === undefined) return { userId, name: userId, role: 'user', scopes: [] };
        // With adminGroup set the proxy's groups are the truth for the role, as OIDC claims are.
        const groups = String(request.headers[groupsHeader] ?? '').split(',');
        const admin = groups.some((group) => group.trim() === adminGroup);
        return {
          userId,
          name: userId,
          role: admin ? 'admin' : 'user',
          scopes: [],
          roleFromCredential: true,
        };
      },
    };
  },
};

/** Parses IPs and CIDRs; an entry that is neither stops the start, naming it. */
export function trustedProxies(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [rawAddress, prefix, extra] = entry.trim().split('/');
    const address = unmapIPv4(rawAddress ?? '');
    const family = isIP(address);
    const bits = prefix === undefined ? undefined : Number(prefix);
    const max = family === 4 ? 32 : 128;
    const badPrefix = bits !== undefined && (!/^\d+$/.test(prefix ?? '') || (bits as number) > max);
    if (family === 0 || extra !== undefined || badPrefix) {
      throw new ConfigError(
        `config: auth.oauth.trustedProxies: "${entry}" is not an IP address or CIDR`,
      );
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

export function isTrusted(list: BlockList, peer: string): boolean {
  const address = unmapIPv4(peer);
  const family = isIP(address);
  if (family === 0) return false;
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** `::ffff:10.0.0.1` (an IPv4 peer on a dual-stack socket) is the IPv4 address 10.0.0.1. */
const unmapIPv4 = (address: string): string => {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return match ? (match[1] as string) : address;
};
