// Every file tool refuses to leave the workspace: `..`, absolute paths, and symlinks pointing out.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEditFileTool } from '../../src/tools/edit-file.js';
import { createGlobTool } from '../../src/tools/glob.js';
import { createGrepTool } from '../../src/tools/grep.js';
import { createListDirTool } from '../../src/tools/list-dir.js';
import { createReadFileTool } from '../../src/tools/read-file.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import { createToolFixture, entries, SECRET, type ToolFixture } from './tool-fixture.js';

const read = createReadFileTool();
const write = createWriteFileTool();
const edit = createEditFileTool();
const list = createListDirTool();
const glob = createGlobTool();
const grep = createGrepTool();

describe('escape attempts', () => {
  let fx: ToolFixture;
  beforeEach(() => {
    fx = createToolFixture();
    fx.addEscapeLinks();
  });
  afterEach(() => fx.cleanup());

  const expectRefused = (result: { status: string; output: string }, why: RegExp) => {
    expect(result.status).toBe('error');
    expect(result.output).toMatch(/^Refused (path|pattern)/);
    expect(result.output).toMatch(why);
    expect(result.output).not.toContain(SECRET);
  };
  const outsideUnchanged = () => {
    expect(entries(fx.outside)).toEqual(['secret.txt']);
    expect(readFileSync(join(fx.outside, 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(entries(fx.parent)).toEqual(['session-a', 'session-b']);
  };

  describe.each([
    ['../x', /leads outside the workspace/],
    ['../session-b/secret.txt', /leads outside the workspace/],
    ['/etc/passwd', /is absolute/],
    ['link/secret.txt', /symlink that leads outside/],
    ['link-file', /symlink that leads outside/],
    ['dangling', /symlink whose target does not exist/],
  ])('path %j', (path, why) => {
    it('read_file refuses it', async () => {
      expectRefused(await fx.run(read, { path }), why);
    });
    it('write_file refuses it and writes nothing outside', async () => {
      expectRefused(await fx.run(write, { path, content: 'pwned' }), why);
      outsideUnchanged();
    });
    it('edit_file refuses it and changes nothing outside', async () => {
      expectRefused(await fx.run(edit, { path, oldText: SECRET, newText: 'pwned' }), why);
      outsideUnchanged();
    });
    it('list_dir refuses it', async () => {
      expectRefused(await fx.run(list, { path: path === 'link/secret.txt' ? 'link' : path }), why);
    });
    it('grep refuses it as a path', async () => {
      expectRefused(await fx.run(grep, { pattern: 'secret', path }), why);
    });
  });

  it('write_file through a symlinked directory creates nothing outside', async () => {
    expectRefused(await fx.run(write, { path: 'link/new/file.txt', content: 'pwned' }), /symlink that leads outside/);
    outsideUnchanged();
  });

  it('glob refuses patterns that climb out and never lists files outside', async () => {
    expectRefused(await fx.run(glob, { pattern: '../**/*.txt' }), /would leave the workspace/);
    expectRefused(await fx.run(glob, { pattern: '{..,x}/**' }), /would leave the workspace/);
    expectRefused(await fx.run(glob, { pattern: '/etc/*' }), /relative to the workspace root/);
    for (const pattern of ['**/*', '**/*.txt', 'link/*', 'link/**', 'link-file']) {
      const result = await fx.run(glob, { pattern });
      expect(result.output, pattern).not.toMatch(/secret\.txt/);
    }
  });

  it('grep refuses escaping globs and never reads files outside', async () => {
    expectRefused(await fx.run(grep, { pattern: 'secret', glob: '../**' }), /would leave the workspace/);
    for (const glob of [undefined, '**/*', 'link/*', 'link-file']) {
      const result = await fx.run(grep, { pattern: SECRET, ...(glob ? { glob } : {}) });
      expect(result.output, String(glob)).not.toContain(`:1: ${SECRET}`);
      expect(result.output).toMatch(/^No matches/);
    }
  });
});
