import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditFileTool } from '../../src/tools/edit-file.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('edit_file', () => {
  let fx: ToolFixture;
  const tool = createEditFileTool();
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('replaces the one exact occurrence', async () => {
    fx.write('a.ts', 'const a = 1;\nconst b = 2;\nconst c = 3;\n');
    expect(
      await fx.run(tool, { path: 'a.ts', oldText: 'const b = 2;', newText: 'const b = 20;\nconst bb = 21;' }),
    ).toEqual({
      status: 'ok',
      output: 'Edited a.ts: replaced 1 occurrence at line 2 (the new text is lines 2-3).',
    });
    expect(fx.read('a.ts')).toBe('const a = 1;\nconst b = 20;\nconst bb = 21;\nconst c = 3;\n');
  });

  it('inserts replacement text literally ($ patterns are not special)', async () => {
    fx.write('a.txt', 'price: X\n');
    await fx.run(tool, { path: 'a.txt', oldText: 'X', newText: "$& $1 $$ $'" });
    expect(fx.read('a.txt')).toBe("price: $& $1 $$ $'\n");
  });

  it('can delete text', async () => {
    fx.write('a.txt', 'keep\ndrop\nkeep too\n');
    expect((await fx.run(tool, { path: 'a.txt', oldText: 'drop\n', newText: '' })).output).toBe(
      'Edited a.txt: replaced 1 occurrence at line 2 (the text was removed).',
    );
    expect(fx.read('a.txt')).toBe('keep\nkeep too\n');
  });

  it('reports zero matches, and several matches with their lines, suggesting more context', async () => {
    fx.write('a.txt', 'x = 1\ny = 2\nx = 1\n');
    expect(await fx.run(tool, { path: 'a.txt', oldText: 'z = 3', newText: 'z = 4' })).toEqual({
      status: 'error',
      output:
        'oldText was not found in a.txt (0 matches). It must match exactly, including whitespace and indentation: read the file again and copy the text from it.',
    });
    expect(await fx.run(tool, { path: 'a.txt', oldText: 'x = 1', newText: 'x = 2' })).toEqual({
      status: 'error',
      output:
        'oldText matches 2 times in a.txt (at lines 1, 3); include more surrounding lines in oldText so that it matches exactly once.',
    });
    expect(fx.read('a.txt')).toBe('x = 1\ny = 2\nx = 1\n');
  });

  it('counts overlapping occurrences as ambiguous', async () => {
    fx.write('a.txt', 'aaa');
    expect((await fx.run(tool, { path: 'a.txt', oldText: 'aa', newText: 'b' })).output).toMatch(/matches 2 times/);
  });

  it('matches LF oldText in a CRLF file and keeps CRLF line ends', async () => {
    fx.write('win.txt', 'one\r\ntwo\r\nthree\r\n');
    expect((await fx.run(tool, { path: 'win.txt', oldText: 'one\ntwo', newText: 'uno\ndos' })).status).toBe('ok');
    expect(fx.read('win.txt')).toBe('uno\r\ndos\r\nthree\r\n');
  });

  it('is not idempotent: a repeat finds the text already replaced', async () => {
    expect(tool.idempotent).toBe(false);
    fx.write('a.txt', 'before\n');
    expect((await fx.run(tool, { path: 'a.txt', oldText: 'before', newText: 'after' })).status).toBe('ok');
    expect(await fx.run(tool, { path: 'a.txt', oldText: 'before', newText: 'after' })).toMatchObject({
      status: 'error',
      output: expect.stringContaining('0 matches'),
    });
  });

  it('reports a missing file and identical texts', async () => {
    expect(await fx.run(tool, { path: 'nope.txt', oldText: 'a', newText: 'b' })).toEqual({
      status: 'error',
      output: 'nope.txt does not exist.',
    });
    expect((await fx.run(tool, { path: 'nope.txt', oldText: 'a', newText: 'a' })).output).toMatch(/the same/);
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(tool, { path: 'a.txt', oldText: '', newText: 'x' })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/^Invalid arguments for edit_file: oldText: Too small/),
    });
    expect((await fx.run(tool, { path: 'a.txt', old_text: 'a', newText: 'b' })).output).toBe(
      'Invalid arguments for edit_file: oldText: expected string, received undefined; unknown field "old_text".',
    );
  });
});
