import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('write_file', () => {
  let fx: ToolFixture;
  const tool = createWriteFileTool();
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('creates the file and its parent directories', async () => {
    expect(await fx.run(tool, { path: 'a/b/c.txt', content: 'héllo\nworld\n' })).toEqual({
      status: 'ok',
      output: 'Wrote 13 bytes (2 lines) to a/b/c.txt.',
    });
    expect(fx.read('a/b/c.txt')).toBe('héllo\nworld\n');
  });

  it('overwrites atomically, leaves no temp file, keeps the mode, and repeats with the same result', async () => {
    fx.write('run.sh', 'old');
    chmodSync(join(fx.workspace, 'run.sh'), 0o755);
    const first = await fx.run(tool, { path: 'run.sh', content: '#!/bin/sh\necho new\n' });
    const again = await fx.run(tool, { path: 'run.sh', content: '#!/bin/sh\necho new\n' });
    expect(again).toEqual(first);
    expect(fx.read('run.sh')).toBe('#!/bin/sh\necho new\n');
    expect(statSync(join(fx.workspace, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(readdirSync(fx.workspace)).toEqual(['run.sh']);
  });

  it('writes an empty file', async () => {
    expect(await fx.run(tool, { path: 'empty', content: '' })).toEqual({
      status: 'ok',
      output: 'Wrote 0 bytes (0 lines) to empty.',
    });
    expect(fx.read('empty')).toBe('');
  });

  it('refuses to replace a directory, and a parent that is a file', async () => {
    fx.write('dir/x', 'x');
    expect(await fx.run(tool, { path: 'dir', content: 'x' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/dir is a directory/),
    });
    expect(await fx.run(tool, { path: 'dir/x/y.txt', content: 'x' })).toMatchObject({ status: 'error' });
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, { path: 'a.txt' })).toEqual({
      status: 'error',
      output: 'Invalid arguments for write_file: content: expected string, received undefined.',
    });
    expect((await fx.run(tool, { path: ['a'], content: 'x' })).output).toMatch(/path: expected string, received array/);
  });
});
