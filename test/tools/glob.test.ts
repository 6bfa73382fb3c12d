import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGlobTool } from '../../src/tools/glob.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

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
