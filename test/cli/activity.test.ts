/**
 * The deploy's activity (issue 29's `activity` of the App view) as `slipway deploy` prints it: each
 * step once when it begins, in the CLI's words; a view without one (a server before issue 29)
 * prints nothing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';
import { Output } from '../../src/cli/output.js';
import { watchPhases } from '../../src/cli/phase-watch.js';
import { startTestServer, type TestServer } from '../support/server.js';

const KEY = 'cli-activity-key-0123456789abcdef';

describe('activity lines', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: KEY, name: 'dev' }] } });
  });
  afterAll(() => server.stop());

  it('prints each step once when it begins, and nothing for a view without activity', async () => {
    const api = new ApiClient({ url: server.baseURL, token: KEY, from: 'env' });
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const watch = await watchPhases(api, 'some-app', new Output(false));
      watch.activity(undefined);
      watch.activity({ step: 'installing', since: '2026-11-26T10:00:00.000Z' });
      watch.activity({ step: 'installing', since: '2026-11-26T10:00:00.000Z', last_line: 'x' });
      watch.activity({ step: 'building', since: '2026-11-26T10:00:05.000Z' });
      watch.activity({ step: 'health-checking', since: '2026-11-26T10:00:09.000Z' });
      // A step a newer server adds is shown as it is named.
      watch.activity({ step: 'warming', since: '2026-11-26T10:00:10.000Z' });
      watch.stop();
    } finally {
      spy.mockRestore();
    }
    expect(written).toEqual([
      '  installing dependencies...\n',
      '  building...\n',
      '  checking health...\n',
      '  warming...\n',
    ]);
  });
});
