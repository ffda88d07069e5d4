/**
 * The addresses the egress gate refuses after resolution: every IANA special-purpose range, IPv4
 * carried inside IPv6, and this host's own interface addresses even in a public range. The
 * interface list is faked here (a public address this machine does not have) so that nothing is
 * dialled: these are the pure checks; test/security/egress.test.ts attacks through a real app.
 */
import { describe, expect, it, vi } from 'vitest';

const PUBLIC_OWN = '93.184.216.34';
vi.mock('node:os', async (importOriginal) => {
  const os = await importOriginal<typeof import('node:os')>();
  const fake = { address: PUBLIC_OWN, family: 'IPv4', internal: false } as const;
  const networkInterfaces = () => ({ ...os.networkInterfaces(), eth9: [fake] });
  return { ...os, default: { ...os, networkInterfaces }, networkInterfaces };
});

const { isPrivateAddress, privateRange } =
  await import('../../src/runtime/egress/egress-policy.js');
const { compileExceptions, privateAllowed } =
  await import('../../src/runtime/egress/egress-policy.js');

describe('egress ranges', () => {
  it.each([
    '0.1.2.3',
    '10.0.0.1',
    '100.64.0.1',
    '127.0.0.2',
    '169.254.169.254',
    '172.16.0.1',
    '192.0.0.8',
    '192.0.2.2',
    '192.88.99.1',
    '192.168.0.1',
    '198.18.0.1',
    '198.19.255.255',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:192.0.2.2',
    '64:ff9b::c000:202',
    '64:ff9b::10.0.0.1',
    '100::1',
    '2001::1',
    '2001:1ff::1',
    '2001:db8::1',
    'fc00::1',
    'fe80::1',
    'ff02::1',
    '2002:c000:0202::1',
    '2002:7f00:1::1',
  ])('refuses %s', (ip) => {
    expect(privateRange(ip)).toBeDefined();
  });

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700::1111', '64:ff9b::808:808', '2002:808:808::1'])(
    'lets the public %s through',
    (ip) => {
      expect(isPrivateAddress(ip)).toBe(false);
    },
  );

  it.each([PUBLIC_OWN, `::ffff:${PUBLIC_OWN}`, '64:ff9b::5db8:d822', '2002:5db8:d822::1'])(
    "refuses this host's own public address, also inside IPv6 (%s)",
    (ip) => {
      expect(privateRange(ip)).toBe('an address of this host');
    },
  );

  it('lets the operator allow a refused address by address, CIDR or name, optionally by port', () => {
    const target = { host: 'internal.example', port: 8443 };
    const allowed = (entries: string[]) =>
      privateAllowed(target, '192.0.2.2', compileExceptions(entries));
    expect(allowed([])).toBe(false);
    expect(allowed(['192.0.2.2'])).toBe(true);
    expect(allowed(['192.0.2.0/24'])).toBe(true);
    expect(allowed(['internal.example'])).toBe(true);
    expect(allowed(['192.0.2.2:8443'])).toBe(true);
    expect(allowed(['192.0.2.2:443'])).toBe(false);
    expect(allowed(['internal.example:443'])).toBe(false);
  });
});
