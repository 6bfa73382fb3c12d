#!/usr/bin/env node
// Compiles the `dh` command line for a fast start: src/cli/main.ts and everything it imports (src/worker/
// included) into dist/cli/ with esbuild — ESM, code split at every dynamic import so a command loads only
// its own modules, npm packages left as imports. bin/dh.mjs runs that build instead of loading tsx (about
// 1 s per command) while dist/cli/stamp.json matches the sources; see the header of bin/dh.mjs.
//
// Built, not committed: dist/ is in .gitignore (a committed build would go stale with every source
// edit), and `npm install` runs this script as the package's `prepare` step, so a fresh clone has the
// build right after install. `npm run build:cli` rebuilds by hand after editing src/. Well under a second.
//
// Safe while `dh` processes run: every file name carries a content hash and is written once (to a temp
// name, then renamed), stamp.json (naming the entry) is replaced last, and a previous build's files are
// deleted only once they are PRUNE_AFTER_MS old — a process loads its chunks within seconds of starting.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';
import { build } from 'esbuild';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const OUT = join(ROOT, 'dist', 'cli');
const ENTRY = 'src/cli/main.ts';
/** What the stamp records besides the bundled sources: the build's own inputs. */
const BUILD_INPUTS = ['scripts/build-cli.mjs', 'tsconfig.json'];
/** Bumped when the stamp's shape changes; bin/dh.mjs ignores a stamp of another format. */
const STAMP_FORMAT = 1;
const PRUNE_AFTER_MS = 10 * 60_000;

const started = Date.now();
// Stat before compiling: a file edited while the build runs then no longer matches its stamp entry.
const before = new Map();
for (const file of [...sourceFiles('src'), ...BUILD_INPUTS]) before.set(file, fileStamp(file));

try {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { main: ENTRY },
    outdir: OUT,
    write: false,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    packages: 'external',
    tsconfig: 'tsconfig.json',
    sourcemap: 'linked',
    sourcesContent: false,
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    // ESM by its extension, whatever package.json says.
    outExtension: { '.js': '.mjs' },
    metafile: true,
    logLevel: 'warning',
    plugins: [sourceImportMetaUrl()],
  });
  mkdirSync(OUT, { recursive: true });
  const written = new Set(['stamp.json']);
  for (const file of result.outputFiles) {
    written.add(basename(file.path));
    // Same name, same content: a file already there stays untouched (a running `dh` may be reading it).
    if (!existsSync(file.path)) writeAtomically(file.path, file.contents);
  }
  const entry = Object.entries(result.metafile.outputs).find(([, output]) => output.entryPoint === ENTRY)?.[0];
  if (entry === undefined) throw new Error('esbuild reported no entry output');
  const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.includes('node_modules/'));
  const stamp = {
    format: STAMP_FORMAT,
    entry: basename(entry),
    builtAt: new Date().toISOString(),
    // [mtimeMs, size] of every file compiled in, as it was before compiling; [0, -1] never matches.
    inputs: Object.fromEntries([...inputs, ...BUILD_INPUTS].sort().map((file) => [file, before.get(file) ?? [0, -1]])),
  };
  writeAtomically(join(OUT, 'stamp.json'), `${JSON.stringify(stamp, null, 1)}\n`);
  for (const name of readdirSync(OUT)) {
    const path = join(OUT, name);
    if (!written.has(name) && Date.now() - statSync(path).mtimeMs > PRUNE_AFTER_MS) rmSync(path, { force: true });
  }
  console.log(
    `dh: built the CLI into ${relative(process.cwd(), OUT) || '.'} (${result.outputFiles.length} files from ` +
      `${inputs.length} sources) in ${Date.now() - started} ms`,
  );
} catch (error) {
  console.error(`dh: building the CLI failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}

function writeAtomically(path, contents) {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  writeFileSync(tmp, contents);
  renameSync(tmp, path);
}

/** The .ts files under `dir` (relative to the repository root, with forward slashes). */
function sourceFiles(dir) {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) =>
      relative(ROOT, join(entry.parentPath ?? entry.path, entry.name))
        .split(sep)
        .join('/'),
    );
}

function fileStamp(file) {
  try {
    const stat = statSync(join(ROOT, file));
    return [stat.mtimeMs, stat.size];
  } catch {
    return undefined;
  }
}

/**
 * Keeps `import.meta.url` meaning the source file's own URL after bundling, so code that finds files
 * next to itself still finds them in src/ (the workflow sources the worker bundles, examples/, bin/dh.mjs):
 * each occurrence becomes the source file's path relative to the chunk, resolved against the chunk's URL.
 * Every output file is written directly into dist/cli/, so one relative prefix fits all of them.
 */
function sourceImportMetaUrl() {
  return {
    name: 'source-import-meta-url',
    setup(pluginBuild) {
      pluginBuild.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        const fromChunk = relative(OUT, args.path).split(sep).join('/');
        if (new URL(fromChunk, pathToFileURL(join(OUT, 'chunk.mjs'))).href !== pathToFileURL(args.path).href) {
          throw new Error(`source-import-meta-url: ${fromChunk} does not lead back to ${args.path}`);
        }
        const url = `new URL(${JSON.stringify(fromChunk)}, import.meta.url).href`;
        return { contents: source.replaceAll('import.meta.url', url), loader: 'ts' };
      });
    },
  };
}
