import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveWorkspacePath } from '../../src/tools/workspace-path.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('resolveWorkspacePath', () => {
  let fx: ToolFixture;
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('resolves relative paths inside the workspace, existing or not', async () => {
    fx.write('src/a.ts', 'x');
    expect(await resolveWorkspacePath(fx.workspace, 'src/a.ts')).toEqual({
      ok: true,
      absolute: join(fx.workspace, 'src/a.ts'),
      relative: 'src/a.ts',
      root: fx.workspace,
      exists: true,
    });
    expect(await resolveWorkspacePath(fx.workspace, './src/../src/new/b.ts')).toMatchObject({
      ok: true,
      absolute: join(fx.workspace, 'src/new/b.ts'),
      relative: 'src/new/b.ts',
      exists: false,
    });
    expect(await resolveWorkspacePath(fx.workspace, '.')).toMatchObject({ ok: true, relative: '.', exists: true });
  });

  it('follows symlinks that stay inside the workspace', async () => {
    fx.write('real/file.txt', 'x');
    symlinkSync(join(fx.workspace, 'real'), join(fx.workspace, 'alias'));
    expect(await resolveWorkspacePath(fx.workspace, 'alias/file.txt')).toMatchObject({
      ok: true,
      relative: 'real/file.txt',
    });
  });

  it.each([
    ['../x', /leads outside the workspace/],
    ['a/../../x', /leads outside the workspace/],
    ['..', /leads outside the workspace/],
    ['/etc/passwd', /is absolute/],
    ['', /empty/],
    ['a\0b', /NUL/],
  ])('refuses %j', async (given, message) => {
    const result = await resolveWorkspacePath(fx.workspace, given);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(message);
  });

  it('suggests the relative form of an absolute path inside the workspace', async () => {
    const result = await resolveWorkspacePath(fx.workspace, join(fx.workspace, 'src/a.ts'));
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining('Use "src/a.ts" instead') });
  });

  it('refuses symlinks leading outside, in any component, and dangling symlinks', async () => {
    fx.addEscapeLinks();
    symlinkSync(fx.sibling, join(fx.workspace, 'neighbour'));
    for (const given of ['link', 'link/secret.txt', 'link/new/deeper.txt', 'link-file', 'neighbour/secret.txt']) {
      const result = await resolveWorkspacePath(fx.workspace, given);
      expect(result, given).toMatchObject({ ok: false, error: expect.stringContaining('outside the workspace') });
    }
    expect(await resolveWorkspacePath(fx.workspace, 'dangling')).toMatchObject({
      ok: false,
      error: expect.stringContaining('does not exist'),
    });
  });

  it('works when the workspace itself is reached through a symlink', async () => {
    const alias = join(fx.parent, 'alias-of-a');
    symlinkSync(fx.workspace, alias);
    fx.write('f.txt', 'x');
    expect(await resolveWorkspacePath(alias, 'f.txt')).toMatchObject({ ok: true, relative: 'f.txt' });
  });

  it('reports a missing workspace as a result', async () => {
    const result = await resolveWorkspacePath(join(fx.parent, 'nope'), 'a');
    expect(result).toMatchObject({ ok: false, error: expect.stringContaining('workspace is not available') });
  });
});
