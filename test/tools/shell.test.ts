// The shell tool without an OS sandbox (`sandbox: 'none'`): output, exit codes, killing the whole
// process group, a scratch environment, the output cap and the approval flag.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createShellTool, shellEnv } from '../../src/tools/shell.js';
import { isAlive, sleepers, uniqueSleep, waitFor } from './process-probe.js';
import { createToolFixture, type ToolFixture } from './tool-fixture.js';

describe('shell (unsandboxed)', () => {
  let fx: ToolFixture;
  const shell = createShellTool({ sandbox: 'none', killGraceMs: 300 });
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('is marked as needing approval when it runs without a sandbox', () => {
    expect(shell).toMatchObject({ sandbox: 'none', requiresApproval: true, idempotent: false, concurrencySafe: false });
    expect(shell.schema.description).toContain('directly on the host');
  });

  it('falls back to no sandbox with `auto` when bwrap cannot run, saying why', () => {
    const fallback = createShellTool({ sandbox: 'auto', bwrapPath: '/nonexistent/bwrap' });
    expect(fallback.sandbox).toBe('none');
    expect(fallback.requiresApproval).toBe(true);
    expect(fallback.sandboxUnavailable).toMatch(/bubblewrap is not installed.*apt-get install -y bubblewrap/);
  });

  it('refuses `sandbox: bwrap` when bwrap cannot run', () => {
    expect(() => createShellTool({ sandbox: 'bwrap', bwrapPath: '/nonexistent/bwrap' })).toThrow(
      expect.objectContaining({
        code: 'SANDBOX_UNAVAILABLE',
        message: expect.stringContaining('apt-get install -y bubblewrap'),
      }),
    );
  });

  it('runs in the workspace and returns stdout and stderr with the exit code', async () => {
    fx.write('hello.txt', 'hi there\n');
    expect(await fx.run(shell, { command: 'pwd; cat hello.txt; echo oops >&2' })).toEqual({
      status: 'ok',
      output: `${fx.workspace}\nhi there\noops\n[exit code 0]`,
    });
    expect(await fx.run(shell, { command: 'echo made > out.txt' })).toMatchObject({ status: 'ok' });
    expect(fx.read('out.txt')).toBe('made\n');
  });

  it('reports a non-zero exit code as an error with the output', async () => {
    expect(await fx.run(shell, { command: 'echo before; exit 3' })).toEqual({
      status: 'error',
      output: 'before\n[exit code 3]',
    });
    expect(await fx.run(shell, { command: 'true' })).toEqual({ status: 'ok', output: '(no output)\n[exit code 0]' });
    expect((await fx.run(shell, { command: 'kill -SEGV $$' })).output).toBe('(no output)\n[killed by signal SIGSEGV]');
  });

  it('gives the command a scratch environment: nothing from the worker', async () => {
    const saved = process.env.DEEPSEEK_API_KEY;
    process.env.DEEPSEEK_API_KEY = 'sk-test-leak';
    try {
      const result = await fx.run(shell, { command: 'env' });
      expect(result.status).toBe('ok');
      expect(result.output).not.toContain('sk-test-leak');
      expect(result.output).not.toContain('DEEPSEEK');
      const names = result.output
        .split('\n')
        .filter((line) => /^[A-Z_][A-Z0-9_]*=/.test(line))
        .map((line) => line.slice(0, line.indexOf('=')));
      const allowed = [...Object.keys(shellEnv(fx.workspace, false)), 'PWD', 'SHLVL', '_'];
      expect(names.filter((name) => !allowed.includes(name))).toEqual([]);
      expect(result.output).toContain(`HOME=${fx.workspace}\n`);
      expect(result.output).toContain(`TMPDIR=${join(fx.workspace, '.dh-tmp')}\n`);
    } finally {
      if (saved === undefined) delete process.env.DEEPSEEK_API_KEY;
      else process.env.DEEPSEEK_API_KEY = saved;
    }
  });

  it('passes explicitly configured variables', async () => {
    const withEnv = createShellTool({ sandbox: 'none', env: { GREETING: 'hello' } });
    expect((await fx.run(withEnv, { command: 'echo $GREETING' })).output).toBe('hello\n[exit code 0]');
  });

  it('kills the whole process group on timeout, escalating to SIGKILL', async () => {
    const marker = uniqueSleep();
    const started = Date.now();
    const result = await fx.run(shell, {
      command: `sleep ${marker} & echo $! > bg.pid; bash -c 'trap "" TERM; sleep ${marker}' & echo started; wait`,
      timeoutMs: 500,
    });
    expect(result).toEqual({
      status: 'error',
      output: 'started\n[timed out after 500 ms: the command and its child processes were killed]',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number(fx.read('bg.pid'));
    await waitFor(() => !isAlive(pid) && sleepers(marker).length === 0, 3_000);
  });

  it('kills the whole process group when the abort signal fires', async () => {
    const marker = uniqueSleep();
    const abort = new AbortController();
    const running = fx.run(shell, { command: `sleep ${marker} & echo $! > bg.pid; wait` }, abort.signal);
    await waitFor(
      () => existsSync(join(fx.workspace, 'bg.pid')) && readFileSync(join(fx.workspace, 'bg.pid'), 'utf8') !== '',
    );
    const pid = Number(fx.read('bg.pid'));
    expect(isAlive(pid)).toBe(true);
    abort.abort();
    expect(await running).toEqual({
      status: 'error',
      output: '(no output)\n[interrupted: the command and its child processes were killed]',
    });
    await waitFor(() => !isAlive(pid), 3_000);
    expect(sleepers(marker)).toEqual([]);
  });

  it('ends background processes left behind when the command exits', async () => {
    const marker = uniqueSleep();
    const started = Date.now();
    const result = await fx.run(shell, { command: `sleep ${marker} & echo $! > bg.pid; echo done` });
    expect(result).toEqual({ status: 'ok', output: 'done\n[exit code 0]' });
    expect(Date.now() - started).toBeLessThan(5_000);
    const pid = Number(fx.read('bg.pid'));
    await waitFor(() => !isAlive(pid), 3_000);
  });

  it('does not hang on a process that left the group and holds the output open', async () => {
    const marker = uniqueSleep();
    const started = Date.now();
    try {
      const result = await fx.run(shell, { command: `setsid sleep ${marker} & echo done` });
      expect(result).toEqual({ status: 'ok', output: 'done\n[exit code 0]' });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      // Without a sandbox a process that calls setsid escapes the group (a documented limit).
      for (const pid of sleepers(marker)) process.kill(pid, 'SIGKILL');
    }
  });

  it('does not start when already interrupted', async () => {
    const abort = new AbortController();
    abort.abort();
    expect(await fx.run(shell, { command: 'echo x > x.txt' }, abort.signal)).toEqual({
      status: 'error',
      output: 'Interrupted before the command started.',
    });
    expect(existsSync(join(fx.workspace, 'x.txt'))).toBe(false);
  });

  it('caps the output, keeping the start and the end, and says so', async () => {
    const small = createShellTool({ sandbox: 'none', maxOutputBytes: 1000 });
    const result = await fx.run(small, {
      command: 'echo START; head -c 100000 /dev/zero | tr "\\0" a; echo; echo END',
    });
    expect(result.status).toBe('ok');
    expect(result.output.startsWith('START\naaa')).toBe(true);
    expect(result.output).toContain(
      '[truncated: 99011 bytes of output omitted (100011 in all); showing the first 500 and the last 500 bytes]',
    );
    expect(result.output.endsWith('aaa\nEND\n[exit code 0]')).toBe(true);
    expect(result.output.length).toBeLessThan(1200);
  });

  it('answers bad arguments with an error naming the field', async () => {
    expect(await fx.run(shell, { command: 'true', timeoutMs: 700_000 })).toMatchObject({
      status: 'error',
      output: expect.stringMatching(/^Invalid arguments for shell: timeoutMs: Too big/),
    });
    expect(await fx.run(shell, { cmd: 'ls' })).toEqual({
      status: 'error',
      output: 'Invalid arguments for shell: command: expected string, received undefined; unknown field "cmd".',
    });
  });
});
