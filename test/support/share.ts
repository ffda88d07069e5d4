import type { ShareLinkView } from '../../src/services/share-view.js';
import { expect } from 'vitest';
import { deploy, waitForPhase } from './deploy.js';
import { call } from './server.js';
import { tarGz } from './tarball.js';

/** A tiny static app; its page says `marker`, so a test can tell which app it reached. */
export async function deployStatic(
  base: string,
  token: string,
  name: string,
  marker = `hello from ${name}`,
): Promise<Record<string, unknown>> {
  const source = await tarGz({ 'index.html': `<!doctype html><p>${marker}</p>` });
  const res = await deploy(base, token, { name }, source);
  expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
  return waitForPhase(base, token, name, ['Ready']);
}

export type ShareLinkBody = ShareLinkView;

/** POSTs a share link and expects 200. */
export async function createLink(
  base: string,
  token: string,
  appId: string,
  json?: Record<string, unknown>,
): Promise<ShareLinkBody> {
  const res = await call(base, `/v1/apps/${appId}/share-links`, { method: 'POST', token, json });
  expect(res.status, res.text).toBe(200);
  return res.body as ShareLinkBody;
}

/** GET (no password) or POST (with `password`) on the public resolve route, without a bearer. */
export function resolveLink(base: string, token: string, password?: string) {
  if (password === undefined) return call(base, `/api/share/${token}`);
  return call(base, `/api/share/${token}`, { method: 'POST', json: { password } });
}

/** Polls until the link resolves 404 (after its expiry); fails after `timeoutMs`. */
export async function waitUntilGone(base: string, token: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await resolveLink(base, token);
    if (res.status === 404 || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 50));
  }
}
