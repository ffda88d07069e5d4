import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/** The machine's own Chromium: tests never download a browser. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`headless Chromium not found at ${CHROMIUM}`);
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}

/**
 * Runs `run` in a tab of a fresh browser context (no cookies from another test), with the tab's
 * page errors and console errors collected; the context is closed afterwards.
 */
export async function withTab<T>(
  browser: Browser,
  run: (tab: Page, errors: string[]) => Promise<T>,
): Promise<T> {
  const context = await browser.newContext();
  try {
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (err) => errors.push(err.message));
    tab.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    return await run(tab, errors);
  } finally {
    await context.close();
  }
}
