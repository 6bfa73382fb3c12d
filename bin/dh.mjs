#!/usr/bin/env node
// Entry point of the `dh` command. It runs the compiled CLI in dist/cli/ (scripts/build-cli.mjs, run by
// `npm install` as the `prepare` step, or by `npm run build:cli`) when that build is up to date: every
// file it was compiled from still has the mtime and size recorded in dist/cli/stamp.json (one stat per
// file, under 2 ms for all). Otherwise — no build yet, or a file it was compiled from edited or deleted
// since (a new file counts through the file that imports it) — it runs the TypeScript sources through
// tsx, as it always did: about a second slower to start, but never stale code. It does not rebuild by
// itself; `npm run build:cli` does. Installed as a package (under node_modules/, from the tarball `npm pack`
// builds), it runs the build it was packed with: npm does not keep the files' mtimes, and nobody edits them there.
// `DH_BIN_TRACE=1` prints which of the two ran, and why, on stderr.
// `DH_BIN_FROM_SOURCE=1` runs the sources through tsx even when the build is fresh (how dh started before
// the build existed; `npm run bench -- --only cli-start` times the two against each other).
import { readFileSync, statSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const installed = fileURLToPath(root).split(sep).includes('node_modules');
const trace = process.env.DH_BIN_TRACE === '1' ? (line) => process.stderr.write(`dh-bin: ${line}\n`) : () => {};

/** The compiled entry's URL when the build matches the sources, else why not. */
function compiledEntry() {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(new URL('dist/cli/stamp.json', root), 'utf8'));
  } catch {
    return { why: 'no build (dist/cli/stamp.json; `npm run build:cli` makes one)' };
  }
  if (stamp.format !== 1 || typeof stamp.entry !== 'string') return { why: 'dist/cli/stamp.json is of another format' };
  if (installed) return { url: new URL(`dist/cli/${stamp.entry}`, root) };
  for (const [file, [mtimeMs, size]] of Object.entries(stamp.inputs)) {
    let stat;
    try {
      stat = statSync(new URL(file, root));
    } catch {
      return { why: `${file} is gone since the build` };
    }
    if (stat.mtimeMs !== mtimeMs || stat.size !== size) return { why: `${file} changed since the build` };
  }
  return { url: new URL(`dist/cli/${stamp.entry}`, root) };
}

const compiled = process.env.DH_BIN_FROM_SOURCE === '1' ? { why: 'DH_BIN_FROM_SOURCE=1' } : compiledEntry();
let main;
if (compiled.url !== undefined) {
  trace(`compiled ${compiled.url.pathname}`);
  // A worker's stack traces (its logs, failures recorded in Temporal) name the TypeScript sources, as
  // under tsx. Other commands skip the source maps (~30 ms at start): their errors are one line, no stack
  // (NODE_OPTIONS=--enable-source-maps turns them on for any command).
  if (process.argv[2] === 'worker') process.setSourceMapsEnabled(true);
  ({ main } = await import(compiled.url.href));
} else {
  trace(`tsx: ${compiled.why}`);
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
await main(process.argv.slice(2)).catch((error) => {
  const code = error && typeof error === 'object' && 'code' in error ? ` [${String(error.code)}]` : '';
  console.error(`dh: ${error instanceof Error ? error.message : String(error)}${code}`);
  // A CliError says its own exit code (2: a usage error); anything else is 1.
  const exitCode = error && typeof error === 'object' && Number.isInteger(error.exitCode) ? error.exitCode : 1;
  process.exitCode = process.exitCode || exitCode;
});
