import { describe, expect, it } from 'vitest';
import { call, removeDir, start } from './helpers.js';

describe('identity cache TTL', () => {
  it('0s: a suspension written straight to the store refuses the very next request', async () => {
    const s = await start({ identityCacheTTL: '0s', apiKeys: [{ key: 'ttl0-key', name: 'ttl0' }] });
    try {
      expect((await call(s.baseURL, '/api/whoami', { token: 'ttl0-key' })).status).toBe(200);
      const user = s.app.store.getUser('apikey-ttl0');
      if (!user) throw new Error('user was not provisioned');
      s.app.store.putUser({ ...user, status: 'suspended' });
      expect((await call(s.baseURL, '/api/whoami', { token: 'ttl0-key' })).status).toBe(401);
    } finally {
      await s.close();
      removeDir(s.dataDir);
    }
  });

  it('1s: a store-side suspension is still allowed right after, refused once the TTL passed', async () => {
    const s = await start({ identityCacheTTL: '1s', apiKeys: [{ key: 'ttl1-key', name: 'ttl1' }] });
    try {
      expect((await call(s.baseURL, '/api/whoami', { token: 'ttl1-key' })).status).toBe(200);
      const user = s.app.store.getUser('apikey-ttl1');
      if (!user) throw new Error('user was not provisioned');
      s.app.store.putUser({ ...user, status: 'suspended', role: 'admin' });
      expect((await call(s.baseURL, '/api/whoami', { token: 'ttl1-key' })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1200));
      expect((await call(s.baseURL, '/api/whoami', { token: 'ttl1-key' })).status).toBe(401);
    } finally {
      await s.close();
      removeDir(s.dataDir);
    }
  });
});
