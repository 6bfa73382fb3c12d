// The docs do not lie: in README.md, CONTRIBUTING.md, RELIABILITY.md and docs/**, every relative link and anchor
// resolves, every `dh` command and flag written in code is the CLI's own (its commander tree, not `dh --help`),
// every DH_* name is a variable dh reads, and the registry, the code and docs/configuration.md agree on them.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { ENV_VARIABLES } from '../../src/config/env-variables.js';
import {
  codeVariableNames,
  commandProblems,
  docVariableProblems,
  linkProblems,
  pathProblems,
  readDocs,
  undocumentedVariables,
  type Doc,
} from './docs-checks.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where the product reads its environment: the CLI, worker and library, the `dh` launcher, scripts, benchmarks. */
const CODE_DIRS = ['src', 'bin', 'scripts', 'bench'];
/** DH_* tokens in that code that are not environment variables. */
const NOT_VARIABLES: Readonly<Record<string, string>> = {
  DH_BIN: 'a constant in bench/first-token.bench.ts: the path of bin/dh.mjs',
};

const docs = readDocs(ROOT);

describe('the docs', () => {
  it('are the files this test means to read', () => {
    const paths = docs.map((doc) => doc.path);
    expect(paths).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'RELIABILITY.md']));
    expect(paths).toContain('docs/configuration.md');
    expect(paths.length).toBeGreaterThan(10);
  });

  it('link only to files that exist, and only to anchors their headings make', () => {
    expect(linkProblems(ROOT, docs)).toEqual([]);
  });

  it('name only files of the repository that exist, in code spans', () => {
    expect(pathProblems(ROOT, docs)).toEqual([]);
  });

  it('write only dh commands and flags the CLI has', () => {
    expect(commandProblems(buildProgram(), docs)).toEqual([]);
  });

  it('name only DH_* variables of the registry', () => {
    expect(docVariableProblems(docs, ENV_VARIABLES)).toEqual([]);
  });
});

describe('the DH_* registry (src/config/env-variables.ts)', () => {
  it('holds each variable once', () => {
    const names = ENV_VARIABLES.map((variable) => variable.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it('lists every DH_* name the code reads', () => {
    const found = codeVariableNames(ROOT, CODE_DIRS);
    // The scan sees the code: the worker's own variables are there.
    expect([...found.keys()]).toEqual(expect.arrayContaining(['DH_PROVIDER', 'DH_HOME', 'DH_LOG_KEY']));
    const missing = [...found]
      .filter(([name]) => !Object.hasOwn(NOT_VARIABLES, name))
      .filter(([name]) => !ENV_VARIABLES.some((variable) => variable.name === name))
      .map(([name, files]) => `${name} (in ${files.join(', ')})`);
    expect(missing).toEqual([]);
  });

  it('is documented entry by entry in docs/configuration.md', () => {
    const configuration = docs.find((doc) => doc.path === 'docs/configuration.md') as Doc;
    expect(undocumentedVariables(configuration, ENV_VARIABLES)).toEqual([]);
  });
});

describe('the checks catch a lie', () => {
  const root = mkdtempSync(join(tmpdir(), 'dh-docs-truth-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string): Doc => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
    return { path, text };
  };
  const target = write(
    'docs/target.md',
    '# The target\n\n## Exit codes\n\n## `dh ls`: what it draws\n\n## Exit codes\n',
  );
  const liar = write(
    'docs/liar.md',
    [
      '# Lies',
      '',
      '[fine](target.md#exit-codes) [fine too](target.md#dh-ls-what-it-draws) [repeat](target.md#exit-codes-1)',
      '[here](#lies) [code](`x`) `[not a link](nowhere.md)`',
      '[gone](missing.md) [no anchor](target.md#no-such-heading) [out](../../outside.md) [self](#nope)',
      '',
      '`dh run --session x`, `dh mcp ls --json`, `dh --help`, `dh frobnicate`, `dh run --frobnicate`, `dh mcp frob`',
      '',
      '```sh',
      'DH_PROVIDER=demo npx dh attach s --follow   # a comment --not-a-flag',
      'dh ui \\',
      '  --nope',
      '```',
      '',
      'Set `DH_HOME`, or `DH_BENCH_*`, but not DH_NOPE.',
      '`src/cli/main.ts` and `src/nowhere.ts`.',
    ].join('\n'),
  );
  write('src/cli/main.ts', '');

  it('finds broken links and anchors, and passes the good ones', () => {
    expect(linkProblems(root, [target, liar])).toEqual([
      'docs/liar.md:5: (missing.md) docs/missing.md does not exist',
      'docs/liar.md:5: (target.md#no-such-heading) docs/target.md has no heading #no-such-heading',
      'docs/liar.md:5: (../../outside.md) leads outside the repository',
      'docs/liar.md:5: (#nope) docs/liar.md has no heading #nope',
    ]);
  });

  it('finds commands, subcommands and flags the CLI does not have', () => {
    expect(commandProblems(buildProgram(), [liar])).toEqual([
      'docs/liar.md:7: `dh frobnicate`: dh frobnicate is not a command',
      'docs/liar.md:7: `dh run --frobnicate`: dh run has no option --frobnicate',
      'docs/liar.md:7: `dh mcp frob`: dh mcp frob is not a command',
      'docs/liar.md:11: `dh ui    --nope`: dh ui has no option --nope',
    ]);
  });

  it('finds DH_* names and paths that do not exist', () => {
    expect(docVariableProblems([liar], ENV_VARIABLES)).toEqual(['docs/liar.md:15: DH_NOPE is not a variable dh reads']);
    expect(pathProblems(root, [liar])).toEqual(['docs/liar.md:16: src/nowhere.ts does not exist']);
    expect(undocumentedVariables(target, ENV_VARIABLES.slice(0, 1))).toEqual([
      `docs/target.md: no row documents DH_PROVIDER (${ENV_VARIABLES[0]?.meaning})`,
    ]);
  });
});
