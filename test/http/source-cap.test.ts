// POST /v1/deploy refuses a source over limits.maxSourceBytes with a 413 that names the
// configured limit, not the default's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';

const KEY = 'source-cap-admin-key-0123456789';
const CAP = 1024 * 1024;

describe('the source size cap of POST /v1/deploy', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'root', role: 'admin' }] },
      runtime: { poolSize: 0 },
      limits: { maxSourceBytes: CAP },
    });
  });
  afterAll(() => server?.stop());

  it('answers 413 naming the configured limit, in the message and in details.limitBytes', async () => {
    const res = await deploy(server.baseURL, KEY, { name: 'big' }, Buffer.alloc(CAP + 1, 1));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      code: 'payload_too_large',
      message: 'source tarball is larger than the limit of 1 MB',
      details: { limitBytes: CAP },
    });
  });
});
