import { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';

/** The TLS options a follower dials the leader with (node:https request options). */
export interface PeerTlsOptions {
  ca: string[];
  allowPartialTrustChain: true;
  servername?: string;
  checkServerIdentity(host: string, cert: PeerCertificate): Error | undefined;
}

/**
 * How a follower checks the leader it reaches at the pod's IP, which no certificate names: every
 * replica serves the same certificate (one Secret), so the leader must present exactly the one
 * this replica serves itself. Its own chain is the only trust anchor (the leaf too: a partial
 * chain, so that a certificate from a private CA whose root is not in the Secret still verifies),
 * and the leaf's SHA-256 fingerprint must match; the host name is not checked, as the IP is not
 * in the certificate. `certPem`: the certificate (chain) this replica's listener serves.
 */
export function peerTls(certPem: string): PeerTlsOptions {
  const chain = pemBlocks(certPem);
  const leafPem = chain[0];
  if (leafPem === undefined) throw new Error('auth.tls: the certificate file holds no certificate');
  const leaf = new X509Certificate(leafPem);
  const fingerprint = leaf.fingerprint256;
  const servername = firstDnsName(leaf.subjectAltName);
  return {
    ca: chain,
    allowPartialTrustChain: true,
    ...(servername ? { servername } : {}),
    checkServerIdentity(_host, cert) {
      if (cert.fingerprint256 === fingerprint) return undefined;
      return new Error(`certificate ${cert.fingerprint256} is not this replica's ${fingerprint}`);
    },
  };
}

function pemBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** The certificate's first DNS name (`DNS:slipway.example.com, IP Address:…`): the SNI sent. */
function firstDnsName(subjectAltName: string | undefined): string | undefined {
  for (const entry of (subjectAltName ?? '').split(',')) {
    const name = entry.trim();
    if (name.startsWith('DNS:') && !name.includes('*')) return name.slice(4);
  }
  return undefined;
}
