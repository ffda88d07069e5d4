import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { openTab, signInWithKey, type Tab } from './browser.js';

export const ALICE = 'alice-dashboard-key-0123456789';
export const BOB = 'bob-dashboard-key-0123456789ab';
export const OPS = 'ops-dashboard-key-0123456789ab';
export const READER = 'reader-dashboard-key-012345678';
// Sandboxes start on a shared two-core machine: generous bounds, never a speed assertion.
export const LIVE = { timeout: 60_000 };

/** A real server with four API-key users (alice, bob, ops the admin, a read-only reader) and Chromium. */
export interface Dashboard {
  server: TestServer;
  base: string;
  browser: Browser;
  /** A new browser context with one tab; closed by `close`. */
  open(): Promise<Tab>;
  /** `open`, then signed in with `key` on the apps list. */
  signIn(key: string): Promise<Tab>;
  close(): Promise<void>;
}

/** One more API key a test file needs beside the four. */
export interface ExtraKey {
  key: string;
  name: string;
  role?: 'admin';
  scopes?: string[];
}

export async function startDashboard(extraKeys: ExtraKey[] = []): Promise<Dashboard> {
  const server = await startTestServer({
    auth: {
      apiKeys: [
        { key: ALICE, name: 'alice' },
        { key: BOB, name: 'bob' },
        { key: OPS, name: 'ops', role: 'admin' },
        { key: READER, name: 'reader', scopes: ['read'] },
        ...extraKeys,
      ],
    },
    runtime: { poolSize: 1 },
  });
  const browser = await launchChromium().catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  const tabs: Tab[] = [];
  const open = async () => {
    const tab = await openTab(browser);
    tabs.push(tab);
    return tab;
  };
  return {
    server,
    base: server.baseURL,
    browser,
    open,
    async signIn(key) {
      const tab = await open();
      await signInWithKey(tab.page, server.baseURL, key);
      return tab;
    },
    async close() {
      for (const tab of tabs) await tab.context.close();
      await browser.close();
      await server.stop();
    },
  };
}
