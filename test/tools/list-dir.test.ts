import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createListDirTool } from '../../src/tools/list-dir.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('list_dir', () => {
  let fx: ToolFixture;
  const tool = createListDirTool();
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('lists the root by default, sorted, directories with "/" and symlinks with "@"', async () => {
    fx.write('b.txt', 'b');
    fx.write('a.txt', 'a');
    fx.write('src/index.ts', 'x');
    fx.write('.hidden', 'h');
    symlinkSync('a.txt', join(fx.workspace, 'c-link'));
    expect(await fx.run(tool, {})).toEqual({ status: 'ok', output: '.hidden\na.txt\nb.txt\nc-link@\nsrc/' });
    expect(await fx.run(tool, { path: 'src' })).toEqual({ status: 'ok', output: 'index.ts' });
  });

  it('caps long listings and says so', async () => {
    for (let i = 0; i < 12; i++) fx.write(`f${String(i).padStart(2, '0')}`, '');
    const result = await fx.run(createListDirTool({ maxEntries: 5 }), { path: '.' });
    expect(result.output.split('\n')).toEqual([
      'f00',
      'f01',
      'f02',
      'f03',
      'f04',
      '[truncated: showing 5 of 12 entries; use glob to narrow down]',
    ]);
  });

  it('reports an empty directory, a file and a missing path', async () => {
    mkdirSync(join(fx.workspace, 'd'));
    fx.write('file.txt', 'x');
    expect(await fx.run(tool, { path: 'file.txt' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/not a directory/),
    });
    expect(await fx.run(tool, { path: 'missing' })).toEqual({ status: 'error', output: 'missing does not exist.' });
    expect(await fx.run(tool, { path: 'd' })).toEqual({ status: 'ok', output: '(d is empty)' });
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, { path: 3 })).toEqual({
      status: 'error',
      output: 'Invalid arguments for list_dir: path: expected string, received number.',
    });
  });
});
