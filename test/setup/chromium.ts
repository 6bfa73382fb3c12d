// Debian's chromium for the web console's browser tests (playwright-core drives it; it never downloads a
// browser): installed with apt-get when missing and we are root; otherwise the run stops, saying how to get it.
import { execFile } from 'node:child_process';
import { aptInstall } from './apt-install.js';

export const CHROMIUM_PATH = process.env.DH_CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function ensureChromium(): Promise<void> {
  if (await chromiumRuns()) return;
  if (process.getuid?.() !== 0 || process.env.DH_CHROMIUM_PATH !== undefined) {
    throw new Error(
      `chromium is not installed at ${CHROMIUM_PATH}: the web console's browser tests (test/console-ui) need it. ` +
        'Install it (Debian/Ubuntu: `sudo apt-get install -y chromium`) or point DH_CHROMIUM_PATH at a ' +
        'Chromium binary, and run the tests again.',
    );
  }
  await aptInstall(['chromium'], 'chromium (the browser for the web console tests)');
  if (!(await chromiumRuns()))
    throw new Error(`apt-get installed chromium, but \`${CHROMIUM_PATH} --version\` still does not run`);
}

function chromiumRuns(): Promise<boolean> {
  return new Promise((resolve) => execFile(CHROMIUM_PATH, ['--version'], (error) => resolve(error === null)));
}
