// The pty harness (test/helpers/pty-terminal.ts) against programs nobody here wrote — bash, tput, stty,
// dd and od — then the chat stack fixture through it: `dh run` in a real terminal shows the scripted answer.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import xtermHeadless from '@xterm/headless';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { asciicastText, renderScreenText, writeAsciicast } from '../helpers/asciicast.js';
import { startChatStack, TEST_MODEL } from '../helpers/chat-stack.js';
import { KEYS, startPty, type PtyTerminal } from '../helpers/pty-terminal.js';

const { Terminal } = xtermHeadless;

/** HOME and cwd of the shells here: bash writes its history there on exit. */
const tmp = mkdtempSync(join(tmpdir(), 'dh-pty-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** An interactive bash with nothing from rc files and a prompt the tests can find. */
function startBash(cols = 80, rows = 24): PtyTerminal {
  return startPty('bash', ['--norc', '--noprofile', '-i'], {
    cols,
    rows,
    env: { PATH: process.env.PATH, HOME: tmp, PS1: 'pty$ ', LANG: 'C.UTF-8' },
    cwd: tmp,
  });
}

describe('startPty against real programs', () => {
  const open: PtyTerminal[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
  });

  it('runs a command typed into an interactive bash and shows its output on the screen', async () => {
    const t = startBash();
    open.push(t);
    await t.waitFor(/^pty\$$/m);
    t.write(`echo hi${KEYS.ENTER}`);
    // `hi` alone on a row is the output, not the echoed command line.
    await t.waitFor((v) => v.lines.includes('hi'));
    // Arithmetic the shell must evaluate: 42 appears nowhere in what was typed.
    t.write(`echo $((6 * 7))${KEYS.ENTER}`);
    const v = await t.waitFor((s) => s.lines.includes('42'));
    expect(v.lines.slice(0, 5)).toEqual(['pty$ echo hi', 'hi', 'pty$ echo $((6 * 7))', '42', 'pty$']);
    expect(v.lines).toHaveLength(24);
    t.write(`exit 7${KEYS.ENTER}`);
    expect(await t.exited).toEqual({ exitCode: 7, signal: 0 });
  });

  it('gives the program the size asked for, and the new size after resize', async () => {
    const t = startBash(93, 17);
    open.push(t);
    await t.waitFor(/^pty\$$/m);
    t.write(`echo "size $(tput cols)x$(tput lines)"${KEYS.ENTER}`);
    await t.waitFor((v) => v.lines.includes('size 93x17'));
    await t.resize(120, 40);
    t.write(`echo "size $(tput cols)x$(tput lines)"${KEYS.ENTER}`);
    const v = await t.waitFor((s) => s.lines.includes('size 120x40'));
    // The emulator changed with the pty: 40 rows, and a 120-column line fits on one row.
    expect(v.lines).toHaveLength(40);
    t.write(`printf '%0120d\\n' 0${KEYS.ENTER}`);
    await t.waitFor((s) => s.lines.includes('0'.repeat(120)));
  });

  it('hands a raw-mode program ESC, Ctrl-J, Enter and Ctrl-C as the bytes themselves', async () => {
    const t = startPty(
      'bash',
      ['-c', "stty raw -echo; printf 'ready\\r\\n'; dd bs=1 count=4 2>/dev/null | od -An -c"],
      {
        env: { PATH: process.env.PATH, LANG: 'C' },
      },
    );
    open.push(t);
    await t.waitFor(/ready/);
    t.write(KEYS.ESC + KEYS.CTRL_J + KEYS.ENTER + KEYS.CTRL_C);
    // Cooked mode would have turned Enter into \n and Ctrl-C into SIGINT; raw mode passes them through.
    const v = await t.waitFor(/033/);
    expect(v.text).toMatch(/033\s+\\n\s+\\r\s+003/);
    expect((await t.exited).exitCode).toBe(0);
  });

  it('waitFor fails with the screen and the raw output when the text never shows', async () => {
    const t = startPty('sh', ['-c', "printf 'only this\\n'; sleep 30"], { env: { PATH: process.env.PATH } });
    open.push(t);
    await t.waitFor(/only this/);
    const error = await t.waitFor(/never printed/, { timeoutMs: 300 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/timed out after 300 ms waiting for \/never printed\//);
    expect((error as Error).message).toMatch(/--- screen \(80x24\) ---\nonly this\n/);
    expect((error as Error).message).toContain(JSON.stringify('only this\r\n'));
    t.kill('SIGTERM');
    expect((await t.exited).signal).toBe(15);
  });

  it('matches scrollback with scope "all", and joins soft-wrapped rows there', async () => {
    const t = startPty('sh', ['-c', "seq 1 60; printf '%s' \"$(printf 'ab%.0s' $(seq 1 50))\"; echo; echo done"], {
      cols: 40,
      rows: 10,
      env: { PATH: process.env.PATH },
    });
    open.push(t);
    const v = await t.waitFor((s) => s.lines.includes('done'));
    // Line 1 scrolled off the 10-row screen long ago; the 100-character line wrapped over three rows.
    expect(v.lines).not.toContain('1');
    expect(v.all.split('\n').slice(0, 3)).toEqual(['1', '2', '3']);
    expect(v.all.split('\n')).toContain('ab'.repeat(50));
    await t.waitFor(/^1\n2\n/, { scope: 'all' });
    await expect(t.waitFor(/^1\n2\n/, { timeoutMs: 100 })).rejects.toThrow(/exited before the screen matched/);
  });

  it('records an asciicast v2 that replays to the same screen', async () => {
    const t = startBash(60, 12);
    open.push(t);
    await t.waitFor(/^pty\$$/m);
    t.write(`for i in 1 2 3; do echo "line $i"; sleep 0.05; done${KEYS.ENTER}`);
    await t.waitFor((v) => v.lines.includes('line 3'));
    await t.resize(70, 14);
    t.write(`echo "é ✓ done"${KEYS.ENTER}`);
    const live = await t.waitFor((v) => v.lines.includes('é ✓ done'));
    const path = join(tmp, 'casts', 'bash.cast');
    writeAsciicast(path, t.recording(), { title: 'bash in a pty' });

    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    const [header, ...events] = lines.map((line) => JSON.parse(line) as unknown);
    expect(header).toMatchObject({
      version: 2,
      width: 60,
      height: 12,
      title: 'bash in a pty',
      env: { TERM: 'xterm-256color' },
    });
    expect(Number.isInteger((header as { timestamp: number }).timestamp)).toBe(true);
    let last = 0;
    for (const event of events) {
      expect(event).toEqual([expect.any(Number), expect.stringMatching(/^[or]$/), expect.any(String)]);
      const [time] = event as [number];
      expect(time).toBeGreaterThanOrEqual(last);
      last = time;
    }
    expect(events).toContainEqual([expect.any(Number), 'r', '70x14']);
    // Keys are left out unless asked for.
    expect(
      asciicastText(t.recording(), { input: true })
        .split('\n')
        .some((l) => l.includes('"i"')),
    ).toBe(true);

    // Replaying the cast into a fresh emulator ends on the screen the live one shows.
    const replay = new Terminal({ cols: 60, rows: 12, allowProposedApi: true });
    for (const event of events as [number, string, string][]) {
      const [, code, data] = event;
      if (code === 'r') {
        const [cols, rows] = data.split('x').map(Number);
        replay.resize(cols as number, rows as number);
      } else await new Promise<void>((resolve) => replay.write(data, resolve));
    }
    const buffer = replay.buffer.active;
    const replayed = Array.from(
      { length: replay.rows },
      (_, y) =>
        buffer
          .getLine(buffer.baseY + y)
          ?.translateToString(true)
          .trimEnd() ?? '',
    );
    replay.dispose();
    expect(replayed).toEqual(live.lines);
  });

  it('renders a screen as a framed text block', () => {
    expect(renderScreenText(['pty$ echo hi', 'hi', 'pty$', '', ''], { width: 14 })).toBe(
      [
        '┌────────────────┐',
        '│ pty$ echo hi   │',
        '│ hi             │',
        '│ pty$           │',
        '└────────────────┘',
        '',
      ].join('\n'),
    );
    expect(renderScreenText(['a  ', 'b', ''], { frame: false })).toBe('a\nb\n');
  });
});

describe('startChatStack: the real dh CLI in a pty against a scripted provider', () => {
  const ANSWER = 'Scripted answer from the chat stack, through a real terminal.';

  it('dh run in a pty shows the scripted answer, and the store and client see the session', async () => {
    const stack = await startChatStack({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [{ match: { lastUserContains: 'pty-task' }, text: ANSWER, chunkSize: 8, chunkDelayMs: 20 }],
      },
    });
    const [node, ...dhArgs] = stack.dhCommand;
    const t = startPty(node, [...dhArgs, 'run', 'pty-task: answer in a terminal'], {
      cols: 100,
      rows: 20,
      env: stack.env,
    });
    try {
      const v = await t.waitFor((s) => s.all.includes(ANSWER), { timeoutMs: 60_000 });
      const exit = await t.exited;
      expect(exit.exitCode, `${v.all}\n--- worker ---\n${stack.worker.stderr()}`).toBe(0);
      const [, sessionId] = /dh: session (\S+) /.exec(v.all) ?? [];
      expect(sessionId, v.all).toBeDefined();
      const events = await stack.store.read(sessionId as string);
      expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(1);
      const state = await stack.sessions.state(sessionId as string);
      expect(state).toMatchObject({ sessionId, turn: 1, lastTurnEnd: { turn: 1, reason: 'completed' } });
      expect(stack.provider.requests().some((r) => r.body.includes('pty-task: answer in a terminal'))).toBe(true);
    } finally {
      await t.close();
      await stack.close();
    }
  }, 120_000);
});
