// Debian's chromium driven by playwright-core (which never downloads a browser), headless; screenshots go
// to test-artifacts/console-ui/ (gitignored) so a failed run can be looked at; the docs' ones to docs/images/.
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from '../setup/chromium.js';

export const ARTIFACTS_DIR = join(import.meta.dirname, '..', '..', 'test-artifacts', 'console-ui');

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // As root (containers, CI) chromium refuses to start with its sandbox.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export const DOCS_IMAGES_DIR = join(import.meta.dirname, '..', '..', 'docs', 'images');

/**
 * A screenshot for the docs (docs/images/<name>.png): the viewport only, so the image keeps its size whatever
 * the page's length, with the caret hidden and animations stopped so a rerun changes few pixels.
 */
export async function docsScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(DOCS_IMAGES_DIR, { recursive: true });
  const path = join(DOCS_IMAGES_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: false, animations: 'disabled', caret: 'hide' });
  return path;
}

/**
 * Writes the page's console lines and uncaught errors to `file` (for a failed run to be read) and returns
 * the errors among them as they come, for a test to assert none happened.
 */
export function recordBrowserLog(page: Page, file: string): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    appendFileSync(file, `${m.type()}: ${m.text()}\n`);
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => {
    appendFileSync(file, `pageerror: ${e.message}\n`);
    errors.push(e.message);
  });
  return errors;
}
