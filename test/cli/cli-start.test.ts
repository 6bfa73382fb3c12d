// bin/dh.mjs runs the compiled CLI (dist/cli, scripts/build-cli.mjs) without loading tsx, and never runs a
// build older than the sources: an edited source sends it back to tsx until the next build. Tried on a copy
// of the CLI's sources in a temp dir (node_modules linked), so editing them touches nothing in this checkout.
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAYLOAD_KEY_ENV } from '../../src/codec/aes-gcm-codec.js';
import { PAYLOAD_KEY_ENV as CLI_PAYLOAD_KEY_ENV } from '../../src/cli/commands/codec-server.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DESCRIPTION = 'durable-harness: durable agent sessions on Temporal';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Modules resolved under node_modules/tsx while it ran. */
  readonly tsxModules: string[];
}

describe('bin/dh.mjs', { timeout: 60_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'dh-cli-start-'));
  const tsxLog = join(root, 'tsx-modules.log');
  const hook = join(root, 'record-tsx.mjs');

  /** `node bin/dh.mjs …` in the copy, with a resolve hook that records every tsx module it loads. */
  function dh(args: readonly string[]): Promise<Run> {
    writeFileSync(tsxLog, '');
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', hook, join(root, 'bin', 'dh.mjs'), ...args],
        { cwd: root, env: { ...process.env, DH_BIN_TRACE: '1', DH_HOME: join(root, 'home') }, encoding: 'utf8' },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ code, stdout, stderr, tsxModules: readFileSync(tsxLog, 'utf8').split('\n').filter(Boolean) });
        },
      );
    });
  }

  /** The entry file the current build's stamp names. */
  function entry(): string {
    return (JSON.parse(readFileSync(join(root, 'dist', 'cli', 'stamp.json'), 'utf8')) as { entry: string }).entry;
  }

  function build(): void {
    execFileSync(process.execPath, [join(root, 'scripts', 'build-cli.mjs')], { cwd: root, stdio: 'pipe' });
  }

  beforeAll(() => {
    for (const path of ['bin', 'src', 'examples', 'package.json', 'tsconfig.json', 'scripts/build-cli.mjs'])
      cpSync(join(REPO, path), join(root, path), { recursive: true });
    symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'), 'dir');
    writeFileSync(
      hook,
      [
        "import { register } from 'node:module';",
        `register(${JSON.stringify(
          `data:text/javascript,${encodeURIComponent(
            [
              "import { appendFileSync } from 'node:fs';",
              'export async function resolve(specifier, context, next) {',
              '  const resolved = await next(specifier, context);',
              `  if (resolved.url.includes('/node_modules/tsx/')) appendFileSync(${JSON.stringify(tsxLog)}, resolved.url + '\\n');`,
              '  return resolved;',
              '}',
            ].join('\n'),
          )}`,
        )});`,
      ].join('\n'),
    );
    build();
  });

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('runs the compiled CLI when the build is current, without loading tsx', async () => {
    const run = await dh(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(DESCRIPTION);
    expect(run.stderr).toContain(`dh-bin: compiled ${join(root, 'dist', 'cli', entry())}`);
    expect(run.tsxModules).toEqual([]);
  });

  it('runs an edited source through tsx instead of the older build, and the build again once rebuilt', async () => {
    const main = join(root, 'src', 'cli', 'main.ts');
    writeFileSync(main, readFileSync(main, 'utf8').replace(DESCRIPTION, 'durable-harness, as edited'));

    const stale = await dh(['--help']);
    expect(stale.code, stale.stderr).toBe(0);
    expect(stale.stdout).toContain('durable-harness, as edited');
    expect(stale.stderr).toContain('dh-bin: tsx: src/cli/main.ts changed since the build');
    expect(stale.tsxModules.length).toBeGreaterThan(0);

    const previous = entry();
    build();
    // A new entry file; the previous build's stay for `dh` processes that are still loading them.
    expect(entry()).not.toBe(previous);
    expect(readdirSync(join(root, 'dist', 'cli'))).toContain(previous);
    const rebuilt = await dh(['--help']);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(rebuilt.stdout).toContain('durable-harness, as edited');
    expect(rebuilt.stderr).toContain('dh-bin: compiled');
    expect(rebuilt.tsxModules).toEqual([]);
  });

  it('runs from source when there is no build', async () => {
    rmSync(join(root, 'dist'), { recursive: true, force: true });
    const run = await dh(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('dh-bin: tsx: no build');
    expect(run.tsxModules.length).toBeGreaterThan(0);
    build();
  });

  it('keeps import.meta.url naming the source file in every compiled chunk', () => {
    // Code that finds files next to itself (the workflow sources, examples/, bin/dh.mjs) must find them in
    // src/, not next to the chunk: the build rewrites each import.meta.url to the source file's URL.
    const dir = join(root, 'dist', 'cli');
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.mjs'))) {
      const code = readFileSync(join(dir, file), 'utf8');
      for (const match of code.matchAll(/import\.meta\.url/g)) {
        const before = code.slice(Math.max(0, match.index - 200), match.index);
        expect(before, `${file}: a bare import.meta.url`).toMatch(/new URL\("\.\.\/\.\.\/(src\/[^"]+|worker)\.ts", $/);
      }
    }
  });

  it("links every chunk the entry can reach under Node's own ESM loader", () => {
    // tsx (and vitest) let a named import from a CommonJS package through; Node's loader does not, so a
    // `import { x } from 'cjs-package'` passes every in-process test and breaks only the built command.
    const dir = join(root, 'dist', 'cli');
    const reachable = new Set<string>();
    const queue = [entry()];
    for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
      if (reachable.has(file)) continue;
      reachable.add(file);
      for (const match of readFileSync(join(dir, file), 'utf8').matchAll(/"\.\/([\w-]+\.mjs)"/g)) queue.push(match[1]!);
    }
    reachable.delete(entry()); // the entry runs the command line; linking the rest loads every module it has
    expect(reachable.size).toBeGreaterThan(10);
    const script = [
      'const files = JSON.parse(process.argv[1]); const failed = [];',
      'for (const f of files) { try { await import(new URL(f, process.argv[2]).href); }',
      "  catch (e) { failed.push(f + ': ' + String(e.message).split('\\n')[0]); } }",
      'console.log(JSON.stringify(failed));',
    ].join('\n');
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', script, JSON.stringify([...reachable]), `file://${dir}/`],
      { cwd: root, encoding: 'utf8', env: { ...process.env, DH_HOME: join(root, 'home') } },
    );
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual([]);
  });

  it("names the codec's payload key variable as the codec does", () => {
    // codec-server.ts keeps a copy so that defining the command does not load Temporal's protobufs.
    expect(CLI_PAYLOAD_KEY_ENV).toBe(PAYLOAD_KEY_ENV);
  });
});
