// The shell tool's OS sandbox for the test run: bubblewrap (`bwrap`) on PATH, installed with apt-get when
// missing and we are root; otherwise the run stops before any test, saying how to get it.
import { execFile } from 'node:child_process';
import { INSTALL_BUBBLEWRAP } from '../../src/tools/shell-sandbox.js';
import { aptInstall } from './apt-install.js';

export async function ensureBubblewrap(): Promise<void> {
  if (await bwrapRuns()) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `bubblewrap (bwrap) is not installed: the shell tool's sandbox tests need it. Install it (Debian/Ubuntu: ` +
        `\`sudo ${INSTALL_BUBBLEWRAP}\`) and run the tests again.`,
    );
  }
  await aptInstall(['bubblewrap'], 'bubblewrap (bwrap, the shell tool sandbox)');
  if (!(await bwrapRuns())) throw new Error('apt-get installed bubblewrap, but `bwrap --version` still does not run');
}

function bwrapRuns(): Promise<boolean> {
  return new Promise((resolve) => execFile('bwrap', ['--version'], (error) => resolve(error === null)));
}
