import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGrepTool } from '../../src/tools/grep.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';
import { killToolProcesses, runToolInProcess } from './tool-process.js';

describe('grep', () => {
  let fx: ToolFixture;
  const tool = createGrepTool();
  beforeEach(() => {
    fx = createToolFixture();
    fx.write('src/a.ts', 'export const answer = 42;\n// TODO: tidy\n');
    fx.write('src/b/c.ts', 'function todo() {}\nconst x = "TODO later";\r\n');
    fx.write('notes.md', 'TODO: write docs\n');
    fx.write('node_modules/dep/index.ts', 'TODO in a dependency\n');
  });
  afterEach(() => fx.cleanup());

  it('prints file:line: text for each matching line, files sorted', async () => {
    expect(await fx.run(tool, { pattern: 'TODO' })).toEqual({
      status: 'ok',
      output: 'notes.md:1: TODO: write docs\nsrc/a.ts:2: // TODO: tidy\nsrc/b/c.ts:2: const x = "TODO later";',
    });
  });

  it('takes a regular expression, a path, a glob and case-insensitivity', async () => {
    expect((await fx.run(tool, { pattern: '\\b\\d{2}\\b' })).output).toBe('src/a.ts:1: export const answer = 42;');
    expect((await fx.run(tool, { pattern: 'todo', caseInsensitive: true, path: 'src/b' })).output).toBe(
      'src/b/c.ts:1: function todo() {}\nsrc/b/c.ts:2: const x = "TODO later";',
    );
    expect((await fx.run(tool, { pattern: 'TODO', glob: '*.md' })).output).toBe('notes.md:1: TODO: write docs');
    expect((await fx.run(tool, { pattern: 'TODO', path: 'src', glob: 'b/*.ts' })).output).toBe(
      'src/b/c.ts:2: const x = "TODO later";',
    );
    expect((await fx.run(tool, { pattern: '^export', path: 'src/a.ts' })).output).toBe(
      'src/a.ts:1: export const answer = 42;',
    );
    expect((await fx.run(tool, { pattern: 'dependency', path: 'node_modules' })).output).toBe(
      'node_modules/dep/index.ts:1: TODO in a dependency',
    );
  });

  it('skips binary files and says so', async () => {
    writeFileSync(join(fx.workspace, 'blob.bin'), Buffer.concat([Buffer.from('TODO'), Buffer.from([0, 1, 2])]));
    const result = await fx.run(tool, { pattern: 'TODO', glob: '*.bin' });
    expect(result).toEqual({
      status: 'ok',
      output: 'No matches for /TODO/ (1 file searched in the workspace).\n[skipped files: 1 binary]',
    });
  });

  it('caps the matches and cuts long lines', async () => {
    fx.write('many.txt', `${'hit\n'.repeat(50)}${'x'.repeat(500)}hit\n`);
    const capped = await fx.run(createGrepTool({ maxMatches: 3 }), { pattern: 'hit', path: 'many.txt' });
    expect(capped.output.split('\n')).toEqual([
      'many.txt:1: hit',
      'many.txt:2: hit',
      'many.txt:3: hit',
      '[truncated: showing the first 3 matches; narrow the pattern, path or glob]',
    ]);
    const cut = await fx.run(createGrepTool({ maxLineChars: 20 }), { pattern: 'x+hit' });
    expect(cut.output).toBe(`many.txt:51: ${'x'.repeat(20)} … [cut]`);
  });

  it('reports no matches, an invalid regex and a missing path', async () => {
    expect(await fx.run(tool, { pattern: 'nothing-like-this' })).toEqual({
      status: 'ok',
      output: 'No matches for /nothing-like-this/ (3 files searched in the workspace).',
    });
    expect(await fx.run(tool, { pattern: '(' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/^Invalid regular expression/),
    });
    expect(await fx.run(tool, { pattern: 'x', path: 'nope' })).toEqual({
      status: 'error',
      output: 'nope does not exist.',
    });
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, { pattern: 'x', caseInsensitive: 'yes' })).toEqual({
      status: 'error',
      output: 'Invalid arguments for grep: caseInsensitive: expected boolean, received string.',
    });
  });
});

describe('grep on RE2', () => {
  let fx: ToolFixture;
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => {
    killToolProcesses();
    fx.cleanup();
  });

  it('answers a nested quantifier over a line of 48 "a"s and a "b" (a backtracking engine never does)', async () => {
    fx.write('redos.txt', `${'a'.repeat(48)}b\n`);
    expect(await runToolInProcess('grep', { pattern: '(a+)+$' }, fx.workspace)).toEqual({
      status: 'ok',
      output: 'No matches for /(a+)+$/ (1 file searched in the workspace).',
    });
  });

  it('matches a line over the bound on its first characters, and says so', async () => {
    fx.write('long.txt', `hit${'x'.repeat(20)}\n${'x'.repeat(20)}hit\nhit\n`);
    const tool = createGrepTool({ maxMatchedLineChars: 10, maxLineChars: 5 });
    expect(await fx.run(tool, { pattern: 'hit' })).toEqual({
      status: 'ok',
      output: [
        'long.txt:1: hitxx … [cut]',
        'long.txt:3: hit',
        '[2 lines longer than 10 characters: searched in the first 10 only]',
      ].join('\n'),
    });
  });

  it('folds case on RE2 and reads its syntax', async () => {
    fx.write('a.ts', 'const Ünïcode = 1;\nconst plain = 2;\n');
    expect((await fx.run(createGrepTool(), { pattern: 'üNÏ', caseInsensitive: true })).output).toBe(
      'a.ts:1: const Ünïcode = 1;',
    );
    expect((await fx.run(createGrepTool(), { pattern: '^const (?<name>\\p{Ll}+) =' })).output).toBe(
      'a.ts:2: const plain = 2;',
    );
  });

  it('answers a lookahead with an error naming RE2 and what to do instead', async () => {
    fx.write('a.txt', 'foo bar\n');
    const result = await fx.run(createGrepTool(), { pattern: 'foo(?= bar)' });
    expect(result.status).toBe('error');
    expect(result.output).toMatch(
      /^Invalid regular expression \/foo\(\?= bar\)\/: RE2 cannot run it \(invalid perl operator: \(\?=\)/,
    );
    expect(result.output).toMatch(/no lookahead, lookbehind or backreferences/);
    expect((await fx.run(createGrepTool(), { pattern: '(a)\\1' })).output).toMatch(
      /^Invalid regular expression \/\(a\)\\1\/: RE2 cannot run it \(invalid escape sequence: \\1\)/,
    );
  });

  it('refuses a glob its translation cannot run, as an error', async () => {
    expect(await fx.run(createGrepTool(), { pattern: 'x', glob: 'file{1..3}.ts' })).toEqual({
      status: 'error',
      output: 'Refused pattern "**/file{1..3}.ts": brace ranges like "{1..3}" are not supported: list the options.',
    });
  });
});
