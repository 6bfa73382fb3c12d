import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReadFileTool } from '../../src/tools/read-file.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('read_file', () => {
  let fx: ToolFixture;
  const tool = createReadFileTool();
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('shows the file with line numbers', async () => {
    fx.write('a.txt', 'alpha\nbeta\r\ngamma\n');
    expect(await fx.run(tool, { path: 'a.txt' })).toEqual({ status: 'ok', output: '1\talpha\n2\tbeta\n3\tgamma' });
  });

  it('shows a 1-based inclusive range and says where it is', async () => {
    fx.write('a.txt', Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n'));
    expect(await fx.run(tool, { path: 'a.txt', startLine: 9, endLine: 10 })).toEqual({
      status: 'ok',
      output: ' 9\tline 9\n10\tline 10\n[showing lines 9-10 of 12]',
    });
    expect((await fx.run(tool, { path: 'a.txt', startLine: 11, endLine: 99 })).output).toBe(
      '11\tline 11\n12\tline 12\n[showing lines 11-12 of 12]',
    );
  });

  it('truncates long files and says how to read on', async () => {
    fx.write('big.txt', Array.from({ length: 9000 }, (_, i) => `row ${i + 1}`).join('\n') + '\n');
    const result = await fx.run(tool, { path: 'big.txt' });
    expect(result.status).toBe('ok');
    const lines = result.output.split('\n');
    expect(lines).toHaveLength(401);
    expect(lines[399]).toBe('400\trow 400');
    expect(lines[400]).toBe('[truncated: showing lines 1-400 of 9000; use startLine=401 to read on]');
    const next = await fx.run(tool, { path: 'big.txt', startLine: 401 });
    expect(next.output.split('\n')[0]).toBe('401\trow 401');
  });

  it('cuts very long lines and caps the output size', async () => {
    const small = createReadFileTool({ maxLineChars: 10, maxOutputChars: 100 });
    fx.write('wide.txt', `${'x'.repeat(50)}\n${'y'.repeat(8)}\n`.repeat(20));
    const result = await fx.run(small, { path: 'wide.txt' });
    expect(result.output).toContain(`1\t${'x'.repeat(10)} … [line cut: 50 characters]`);
    expect(result.output).toMatch(/\[truncated: showing lines 1-\d+ of 40; use startLine=\d+ to read on\]$/);
  });

  it('reports an empty file, a missing file, a directory and a binary file', async () => {
    fx.write('empty.txt', '');
    fx.write('dir/x.txt', 'x');
    writeFileSync(join(fx.workspace, 'bin.dat'), Buffer.from([0x7f, 0x45, 0x00, 0x01]));
    expect(await fx.run(tool, { path: 'empty.txt' })).toEqual({ status: 'ok', output: '(empty.txt is empty)' });
    expect(await fx.run(tool, { path: 'missing.txt' })).toEqual({
      status: 'error',
      output: 'missing.txt does not exist.',
    });
    expect(await fx.run(tool, { path: 'dir' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/is a directory/),
    });
    expect(await fx.run(tool, { path: 'bin.dat' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/binary/),
    });
  });

  it('refuses a range that does not fit the file', async () => {
    fx.write('a.txt', 'one\ntwo\n');
    expect(await fx.run(tool, { path: 'a.txt', startLine: 5 })).toEqual({
      status: 'error',
      output: 'startLine 5 is past the end of a.txt (2 lines).',
    });
    expect(await fx.run(tool, { path: 'a.txt', startLine: 2, endLine: 1 })).toEqual({
      status: 'error',
      output: 'endLine 1 is before startLine 2.',
    });
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, { path: 7 })).toEqual({
      status: 'error',
      output: 'Invalid arguments for read_file: path: expected string, received number.',
    });
    expect((await fx.run(tool, { path: 'a.txt', startLine: 0 })).output).toMatch(/startLine: Too small/);
    expect((await fx.run(tool, { path: 'a.txt', startLine: 1.5 })).output).toMatch(/startLine: expected int/);
    expect((await fx.run(tool, { file: 'a.txt' })).output).toMatch(
      /path: expected string, received undefined; unknown field "file"/,
    );
    expect((await fx.run(tool, 'a.txt')).output).toMatch(/arguments: expected object/);
  });
});
