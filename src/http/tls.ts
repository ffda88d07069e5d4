import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';

export interface TlsMaterial {
  key: string;
  cert: string;
}

/**
 * The key and certificate the listener serves, or undefined when TLS is off. `autoTLS` makes a
 * self-signed certificate for localhost, 127.0.0.1, ::1 and this host's name, kept under the data
 * dir so that a browser exception survives restarts.
 */
export async function resolveTls(config: Config): Promise<TlsMaterial | undefined> {
  const tls = config.auth.tls;
  if (!tls.enabled && !tls.autoTLS) return undefined;
  if (tls.certFile || tls.keyFile) {
    if (!tls.certFile || !tls.keyFile) {
      throw new ConfigError('config: auth.tls: certFile and keyFile must be set together');
    }
    return {
      cert: readPem(tls.certFile, 'auth.tls.certFile'),
      key: readPem(tls.keyFile, 'auth.tls.keyFile'),
    };
  }
  if (!tls.autoTLS) {
    throw new ConfigError('config: auth.tls.enabled needs certFile and keyFile, or autoTLS: true');
  }
  return selfSigned(join(config.server.dataDir, 'tls'));
}

function readPem(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config: ${key}: cannot read ${path}: ${(err as Error).message}`);
  }
}

async function selfSigned(dir: string): Promise<TlsMaterial> {
  const keyPath = join(dir, 'auto-key.pem');
  const certPath = join(dir, 'auto-cert.pem');
  if (existsSync(keyPath) && existsSync(certPath)) {
    return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
  }
  const host = hostname();
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 365 * 24 * 3600 * 1000),
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 2, value: host },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(keyPath, pems.private, { mode: 0o600 });
  writeFileSync(certPath, pems.cert);
  return { key: pems.private, cert: pems.cert };
}
