import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { expect } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Written by the tests; the README links the folder. */
export const SCREENSHOTS = join(ROOT, 'docs', 'screenshots');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A tab whose console errors, page errors and CSP violations are collected for the test. */
export interface Tab {
  context: BrowserContext;
  page: Page;
  problems: string[];
}

export async function openTab(browser: Browser): Promise<Tab> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const page = await context.newPage();
  const problems: string[] = [];
  // Each entry starts with the URL it came from, so a test can keep only its own origin's.
  page.on('pageerror', (err) => problems.push(`${page.url()} pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`${msg.location().url} console: ${msg.text()}`);
  });
  return { context, page, problems };
}

/** Signs in on the apikey page with `key` and waits for the apps list. */
export async function signInWithKey(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor();
}

/**
 * Runs axe-core in the page (through the DevTools protocol, so the page's CSP stays as served)
 * and fails on any serious or critical violation, in light and in dark.
 */
export async function expectAccessible(page: Page, label: string): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.evaluate(AXE);
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: AxeLike }).axe;
      const result = await axe.run(document, { resultTypes: ['violations'] });
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
    expect(violations, `${label} in ${colorScheme}`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

interface AxeLike {
  run(
    context: Document,
    options: object,
  ): Promise<{ violations: { id: string; impact?: string; nodes: { target: string[] }[] }[] }>;
}

/** `docs/screenshots/<name>-light.png` and `-dark.png` of the page now, `mask` blacked out. */
export async function screenshot(page: Page, name: string, mask: Locator[] = []): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    const path = join(SCREENSHOTS, `${name}-${colorScheme}.png`);
    await page.screenshot({ path, fullPage: true, mask });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/**
 * Fails when the page scrolls sideways or any visible element reaches past the viewport's right
 * edge (content inside an element that scrolls or clips on its own is that element's business).
 */
export async function expectNoOverflow(page: Page, label: string): Promise<void> {
  const wide = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const clipped = (el: Element): boolean => {
      for (let up = el.parentElement; up; up = up.parentElement) {
        if (getComputedStyle(up).overflowX !== 'visible') return true;
      }
      return false;
    };
    const out = [...document.body.querySelectorAll('*')]
      .filter((el) => {
        const box = el.getBoundingClientRect();
        return box.width > 0 && box.right > width + 0.5 && !clipped(el);
      })
      .map(
        (el) =>
          `${el.tagName.toLowerCase()}.${el.className} (${el.getBoundingClientRect().right}px)`,
      );
    const page = document.documentElement.scrollWidth;
    return page > width ? [`the page is ${page}px wide`, ...out] : out;
  });
  expect(wide, `${label}: wider than the viewport`).toEqual([]);
}

/** A row of the apps table by app id. */
export const appRow = (page: Page, id: string) => page.locator(`tr[data-app="${id}"]`);
