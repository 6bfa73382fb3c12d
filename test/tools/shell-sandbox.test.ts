// The shell under bubblewrap. These tests need a working `bwrap`: without one they FAIL (install it:
// apt-get install -y bubblewrap); the unsandboxed fallback is tested in shell.test.ts.
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createShellTool, type ShellTool } from '../../src/tools/shell.js';
import { bwrapArgs, probeBwrap } from '../../src/tools/shell-sandbox.js';
import { sleepers, uniqueSleep, waitFor } from './process-probe.js';
import { createToolFixture, SECRET, type ToolFixture } from './tool-fixture.js';

const probe = probeBwrap();

/** The sandbox tests fail, never skip, on a machine without a working bubblewrap. */
function sandboxedShell(options: Parameters<typeof createShellTool>[0] = {}): ShellTool {
  if (!probe.available) {
    throw new Error(
      `bubblewrap (bwrap) is required for the shell sandbox tests and does not work here: ${probe.reason}. ` +
        'Install it with: apt-get install -y bubblewrap',
    );
  }
  return createShellTool({ sandbox: 'bwrap', killGraceMs: 300, ...options });
}

describe('shell under bubblewrap', () => {
  let fx: ToolFixture;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((socket) => socket.end('hello from the host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    fx = createToolFixture();
  });
  afterEach(() => fx.cleanup());

  it('is used by `auto` when it works, and then needs no approval', () => {
    sandboxedShell();
    const shell = createShellTool({ sandbox: 'auto' });
    expect(shell).toMatchObject({ sandbox: 'bwrap', requiresApproval: false });
    expect(shell.sandboxUnavailable).toBeUndefined();
    expect(shell.schema.description).toContain('in a sandbox');
  });

  it('can write inside the workspace', async () => {
    const shell = sandboxedShell();
    expect(await fx.run(shell, { command: 'mkdir -p sub && echo inside > sub/f.txt && cat sub/f.txt && pwd' })).toEqual(
      {
        status: 'ok',
        output: `inside\n${fx.workspace}\n[exit code 0]`,
      },
    );
    expect(fx.read('sub/f.txt')).toBe('inside\n');
  });

  it('cannot write next to the workspace (`cd .. && touch x` fails)', async () => {
    const shell = sandboxedShell();
    const result = await fx.run(shell, { command: 'cd .. && touch x' });
    expect(result.status).toBe('error');
    expect(result.output).toMatch(/Read-only file system/);
    expect(readdirSync(fx.parent).sort()).toEqual(['session-a', 'session-b']);
  });

  it('cannot read or even see a sibling workspace', async () => {
    const shell = sandboxedShell();
    const result = await fx.run(shell, { command: `ls ..; cat ${fx.sibling}/secret.txt` });
    expect(result.status).toBe('error');
    expect(result.output).not.toContain(SECRET);
    expect(result.output).not.toContain('session-b\n');
    expect(result.output).toContain('No such file or directory');
  });

  it('has a private /tmp: writes there are not visible on the host', async () => {
    const shell = sandboxedShell();
    const name = `dh-sandbox-probe-${process.pid}-${Date.now()}`;
    expect(await fx.run(shell, { command: `echo x > /tmp/${name} && cat /tmp/${name} && echo $TMPDIR` })).toEqual({
      status: 'ok',
      output: 'x\n/tmp\n[exit code 0]',
    });
    expect(existsSync(join('/tmp', name))).toBe(false);
  });

  it('cannot write to the root filesystem, nor unmount the hiding mounts', async () => {
    const shell = sandboxedShell();
    const result = await fx.run(shell, {
      command: `touch /usr/dh-x; umount -l ${fx.parent} 2>&1 || echo umount-failed; grep CapEff /proc/self/status`,
    });
    expect(result.output).toMatch(/Read-only file system/);
    expect(result.output).toContain('umount-failed');
    expect(result.output).toContain('CapEff:\t0000000000000000');
  });

  it("hides the worker's home and working directory", async () => {
    const shell = sandboxedShell();
    const result = await fx.run(shell, { command: `ls -A ${process.cwd()} | wc -l; ls -A /root | wc -l` });
    expect(result.output).toBe('0\n0\n[exit code 0]');
  });

  it('sees no worker environment and no worker processes', async () => {
    const shell = sandboxedShell();
    const saved = process.env.DEEPSEEK_API_KEY;
    process.env.DEEPSEEK_API_KEY = 'sk-test-leak';
    try {
      const result = await fx.run(shell, {
        command: 'env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; ps -e -o comm=',
      });
      expect(result.status).toBe('ok');
      expect(result.output).not.toContain('sk-test-leak');
      expect(result.output).not.toContain('DEEPSEEK');
      expect(result.output).not.toMatch(/^node$/m);
    } finally {
      if (saved === undefined) delete process.env.DEEPSEEK_API_KEY;
      else process.env.DEEPSEEK_API_KEY = saved;
    }
  });

  it("has no network: the host's loopback services are out of reach", async () => {
    const shell = sandboxedShell();
    const result = await fx.run(shell, { command: `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3` });
    expect(result.status).toBe('error');
    expect(result.output).not.toContain('hello from the host');
    const networked = sandboxedShell({ network: true });
    expect((await fx.run(networked, { command: `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3` })).output).toBe(
      'hello from the host\n[exit code 0]',
    );
  });

  it('kills everything in the sandbox on timeout and on abort', async () => {
    const shell = sandboxedShell();
    const marker = uniqueSleep();
    const timedOut = await fx.run(shell, {
      command: `sleep ${marker} & bash -c 'trap "" TERM; sleep ${marker}' & echo started; wait`,
      timeoutMs: 1_000,
    });
    expect(timedOut).toEqual({
      status: 'error',
      output: 'started\n[timed out after 1000 ms: the command and its child processes were killed]',
    });
    await waitFor(() => sleepers(marker).length === 0, 3_000);

    const abort = new AbortController();
    const other = uniqueSleep();
    const running = fx.run(shell, { command: `setsid sleep ${other} & sleep ${other}` }, abort.signal);
    await waitFor(() => sleepers(other).length === 2);
    abort.abort();
    expect((await running).output).toContain('[interrupted: the command and its child processes were killed]');
    await waitFor(() => sleepers(other).length === 0, 3_000);
  });

  it('builds the documented command line', () => {
    sandboxedShell();
    const args = bwrapArgs(fx.workspace);
    const at = (flag: string, value: string) => args.findIndex((arg, i) => arg === flag && args[i + 1] === value);
    expect(args.slice(0, 3)).toEqual(['--ro-bind', '/', '/']);
    expect(at('--tmpfs', '/tmp')).toBeGreaterThan(0);
    expect(at('--tmpfs', fx.parent)).toBeGreaterThan(at('--tmpfs', '/tmp'));
    expect(at('--bind', fx.workspace)).toBeGreaterThan(at('--tmpfs', fx.parent));
    expect(at('--remount-ro', fx.parent)).toBeGreaterThan(at('--bind', fx.workspace));
    expect(args).toEqual(
      expect.arrayContaining(['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL']),
    );
    expect(args).not.toContain('--share-net');
    expect(bwrapArgs(fx.workspace, { network: true })).toContain('--share-net');
  });
});
