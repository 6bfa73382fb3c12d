import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGrepTool } from '../../src/tools/grep.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

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
