import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGlobTool } from '../../src/tools/glob.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';
import { killToolProcesses, runToolInProcess } from './tool-process.js';

describe('glob', () => {
  let fx: ToolFixture;
  const tool = createGlobTool();
  beforeEach(() => {
    fx = createToolFixture();
    fx.write('src/index.ts', '');
    fx.write('src/b/util.ts', '');
    fx.write('src/b/util.test.ts', '');
    fx.write('README.md', '');
    fx.write('.github/ci.yml', '');
    fx.write('node_modules/dep/index.ts', '');
    fx.write('.git/config', '');
  });
  afterEach(() => fx.cleanup());

  it('lists matching files relative to the workspace, sorted', async () => {
    expect(await fx.run(tool, { pattern: 'src/**/*.ts' })).toEqual({
      status: 'ok',
      output: 'src/b/util.test.ts\nsrc/b/util.ts\nsrc/index.ts',
    });
    expect((await fx.run(tool, { pattern: '**/*.{md,yml}' })).output).toBe('.github/ci.yml\nREADME.md');
  });

  it('keeps * and ? within a segment; ** spans directories; a leading ./ is the root', async () => {
    expect((await fx.run(tool, { pattern: 'src/*.ts' })).output).toBe('src/index.ts');
    expect((await fx.run(tool, { pattern: '*/*/util.?s' })).output).toBe('src/b/util.ts');
    expect((await fx.run(tool, { pattern: '**/util*' })).output).toBe('src/b/util.test.ts\nsrc/b/util.ts');
    expect((await fx.run(tool, { pattern: './src/[a-z]*.ts' })).output).toBe('src/index.ts');
    expect((await fx.run(tool, { pattern: '{README,src/index}.{md,ts}' })).output).toBe('README.md\nsrc/index.ts');
    // As tinyglobby did: `dir/**` is `dir` too, also when it is a file.
    expect((await fx.run(tool, { pattern: 'src/index.ts/**' })).output).toBe('src/index.ts');
    expect((await fx.run(tool, { pattern: 'src/nowhere/**' })).output).toBe('No files match "src/nowhere/**".');
  });

  it('refuses syntax its RE2 translation does not take, as an error the model reads', async () => {
    expect(await fx.run(tool, { pattern: 'src/+(a|b).ts' })).toEqual({
      status: 'error',
      output:
        'Refused pattern "src/+(a|b).ts": extended glob patterns like "+(...)" are not supported (escape it as "\\+(").',
    });
    expect((await fx.run(tool, { pattern: 'src/file{1..3}' })).output).toMatch(/brace ranges like "\{1\.\.3\}"/);
  });

  it('skips .git and node_modules unless the pattern names them', async () => {
    expect((await fx.run(tool, { pattern: '**/*' })).output.split('\n')).toEqual([
      '.github/ci.yml',
      'README.md',
      'src/b/util.test.ts',
      'src/b/util.ts',
      'src/index.ts',
    ]);
    expect((await fx.run(tool, { pattern: 'node_modules/**/*.ts' })).output).toBe('node_modules/dep/index.ts');
  });

  it('says when nothing matches, and caps long results', async () => {
    expect(await fx.run(tool, { pattern: '**/*.rs' })).toEqual({ status: 'ok', output: 'No files match "**/*.rs".' });
    expect((await fx.run(createGlobTool({ maxResults: 2 }), { pattern: 'src/**' })).output).toBe(
      'src/b/util.test.ts\nsrc/b/util.ts\n[truncated: showing 2 of 3 matches; narrow the pattern]',
    );
  });

  it('does not follow symlinks, also not ones that stay inside', async () => {
    mkdirSync(join(fx.workspace, 'empty'));
    symlinkSync(join(fx.workspace, 'src'), join(fx.workspace, 'src-alias'));
    expect((await fx.run(tool, { pattern: '**/index.ts' })).output).toBe('src/index.ts');
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, {})).toEqual({
      status: 'error',
      output: 'Invalid arguments for glob: pattern: expected string, received undefined.',
    });
    expect((await fx.run(tool, { pattern: '' })).output).toMatch(/empty/);
  });
});

describe('glob on RE2', () => {
  let fx: ToolFixture;
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => {
    killToolProcesses();
    fx.cleanup();
  });

  it('answers a glob of many stars over a file named with 50 "a"s (picomatch takes half a minute)', async () => {
    // 50 "a"s took picomatch 29.8 s; 60 take it minutes more.
    fx.write('a'.repeat(50), '');
    fx.write('a'.repeat(60), '');
    fx.write(`${'a'.repeat(50)}c`, '');
    expect(await runToolInProcess('glob', { pattern: '*a*a*a*a*a*a*a*a*c' }, fx.workspace)).toEqual({
      status: 'ok',
      output: `${'a'.repeat(50)}c`,
    });
  });
});
