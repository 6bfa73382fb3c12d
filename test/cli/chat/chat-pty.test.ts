// `dh chat` in a real pseudo-terminal, typed at like a person would: a steer typed while the answer streams
// enters the next step and a Tab-queued followup runs after the turn; Esc interrupts and a message typed right
// after is moved to the next turn, and the screen says so; an approval is decided inline; the terminal is
// resized; Ctrl-D detaches and `dh chat <session>` comes back with the history shown.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESC_DELAY_MS } from '../../../src/cli/chat/chat-app.js';
import { renderScreenText, writeAsciicast } from '../../helpers/asciicast.js';
import { startChatStack, TEST_MODEL, type ChatStack } from '../../helpers/chat-stack.js';
import { ofType, turnEnds } from '../../helpers/log-views.js';
import { KEYS, startPty, type PtyTerminal } from '../../helpers/pty-terminal.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'chat');
const SLOW = { chunkSize: 3, chunkDelayMs: 120 } as const;
const STORY = 'Once upon a time there was a session that streamed very slowly, word by word, on and on. '.repeat(6);

describe('dh chat in a pseudo-terminal', () => {
  let stack: ChatStack;
  const terminals: PtyTerminal[] = [];

  beforeAll(async () => {
    stack = await startChatStack({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          // (a) a slow answer, then a call that waits for approval; the steer typed meanwhile enters step 2.
          {
            match: { lastUserContains: '[a] look' },
            text: 'Looking around the workspace first, slowly, before I write it down. '.repeat(3),
            // Asks for approval: the turn waits there, so the queued messages stay visible until the test says y.
            toolCalls: [{ id: 'a-w', name: 'write_file', arguments: { path: 'a.txt', content: 'seen' } }],
            ...SLOW,
          },
          { match: { lastUserContains: 'LATE steer' }, text: 'Steered: I kept it short.' },
          { match: { lastUserContains: '[a] queued' }, text: 'The queued followup ran after the turn.' },
          // (b) a story streamed until Esc; the message typed after it starts turn 2.
          { match: { lastUserContains: '[b] story' }, text: STORY, ...SLOW },
          { match: { lastUserContains: '[b] after-esc' }, text: 'Short version: it ended.' },
          // (c) an approval decided inline, then a second visit.
          {
            match: { lastUserContains: '[c] note' },
            text: 'Writing the note.',
            toolCalls: [{ id: 'c-w', name: 'write_file', arguments: { path: 'note.txt', content: 'hello' } }],
          },
          { match: { lastUserContains: '[c] note' }, text: 'The note is written.' },
          { match: { lastUserContains: '[c] again' }, text: 'Welcome back; nothing was lost.' },
        ],
      },
      env: { DH_APPROVAL_ASK: 'write_file' },
    });
  }, 120_000);

  afterAll(async () => {
    for (const terminal of terminals) terminal.kill('SIGKILL');
    await stack?.close();
  }, 60_000);

  const chat = (args: readonly string[] = [], size = { cols: 110, rows: 32 }) => {
    const [node, bin] = stack.dhCommand;
    const terminal = startPty(node, [bin, 'chat', ...args], { ...size, env: stack.env, cwd: stack.home });
    terminals.push(terminal);
    return terminal;
  };
  /** Types `text`, then `key` (Enter by default). */
  const type = (terminal: PtyTerminal, text: string, key: string = KEYS.ENTER) => {
    terminal.write(text);
    terminal.write(key);
  };
  const sessionOf = async (terminal: PtyTerminal) =>
    /new session (\S+):/.exec((await terminal.waitFor(/new session \S+:/)).text)?.[1] ?? '';

  it('a steer typed while the answer streams enters the next step; a Tab-queued followup runs after the turn', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    type(terminal, '[a] look around the workspace');
    await terminal.waitFor(/Looking around/, { timeoutMs: 30_000 });
    // Mid-stream: a steer (Enter) and a followup for after this turn (Tab), each shown in its queue.
    type(terminal, '[a] LATE steer: keep it short');
    type(terminal, '[a] queued: then summarize', KEYS.TAB);
    const queued = await terminal.waitFor(
      (view) =>
        /waiting for the next step: \[a\] LATE steer/.test(view.text) &&
        /waiting for the next turn: \[a\] queued/.test(view.text),
      { timeoutMs: 30_000 },
    );
    expect(queued.text).toMatch(/turn 1 .*Enter steer · Tab after this turn · Esc interrupt/);
    await terminal.waitFor(/needs approval/, { timeoutMs: 30_000 });
    const held = await terminal.view();
    expect(held.text).toMatch(
      /waiting for the next step: \[a\] LATE steer[\s\S]*waiting for the next turn: \[a\] queued/,
    );
    terminal.write('y');
    await terminal.waitFor(/The queued followup ran after the turn\./, { timeoutMs: 60_000, scope: 'all' });
    const final = await terminal.waitFor((view) => / idle · Enter send/.test(view.text), { timeoutMs: 15_000 });
    expect(final.all).toMatch(/› you \(steer, entered step 2\): \[a\] LATE steer: keep it short/);
    expect(final.all).toMatch(/Steered: I kept it short\./);
    expect(final.text).not.toMatch(/waiting for the/);

    // The screen shows the answer once it is logged; the turn's end is logged just after.
    await expect
      .poll(async () => turnEnds(await stack.store.read(sessionId)), { timeout: 15_000 })
      .toEqual(['1:completed', '2:completed']);
    const log = await stack.store.read(sessionId);
    const steer = ofType(log, 'user/message').find((m) => m.origin === 'steer');
    expect([steer?.turn, steer?.step]).toEqual([1, 2]);
    const queuedUp = ofType(log, 'user/message').find((m) => JSON.stringify(m.content).includes('[a] queued'));
    expect([queuedUp?.origin, queuedUp?.turn]).toEqual(['followup', 2]);

    writeAsciicast(join(ARTIFACTS, 'steer-and-queue.cast'), terminal.recording(), {
      title: 'dh chat: steer and queue',
    });
    writeFileSync(join(ARTIFACTS, 'steer-and-queue.txt'), renderScreenText(held.lines));
    terminal.write(KEYS.CTRL_D);
    expect((await terminal.exited).exitCode).toBe(0);
  }, 150_000);

  it('Esc interrupts the streaming turn; a message typed right after moves to the next turn, and the screen says so', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    type(terminal, '[b] story, please');
    await terminal.waitFor(/Once upon a time/, { timeoutMs: 30_000 });
    terminal.write('[b] after-esc: the short version');
    await terminal.waitFor(/› \[b\] after-esc: the short version/);
    terminal.write(KEYS.ESC);
    await terminal.waitFor(/interrupting the turn/, { timeoutMs: ESC_DELAY_MS + 10_000, scope: 'all' });
    terminal.write(KEYS.ENTER);
    const moved = await terminal.waitFor(
      /↓ "\[b\] after-esc: the short version" came as the turn was being interrupted: it will start the next turn/,
      {
        timeoutMs: 30_000,
        scope: 'all',
      },
    );
    expect(moved.all).toMatch(/⏹ interrupted: the partial answer above is logged as interrupted/);
    expect(moved.all).toMatch(/■ turn 1 aborted/);
    await terminal.waitFor(/Short version: it ended\./, { timeoutMs: 60_000, scope: 'all' });

    // The screen shows the answer once it is logged; the turn's end is logged just after.
    await expect
      .poll(async () => turnEnds(await stack.store.read(sessionId)), { timeout: 15_000 })
      .toEqual(['1:aborted', '2:completed']);
    const log = await stack.store.read(sessionId);
    expect(ofType(log, 'inbox/downgrade')).toHaveLength(1);
    const after = ofType(log, 'user/message').find((m) => JSON.stringify(m.content).includes('after-esc'));
    expect(after?.turn).toBe(2);
    terminal.write(KEYS.CTRL_D);
    expect((await terminal.exited).exitCode).toBe(0);
  }, 150_000);

  it('an approval decided with y; a resize; Ctrl-D detaches and dh chat <session> comes back with the history', async () => {
    const terminal = chat([], { cols: 100, rows: 30 });
    const sessionId = await sessionOf(terminal);
    // A multiline message: Ctrl-J and Alt-Enter (Esc + Enter) each add a line, Enter sends all three.
    type(terminal, `[c] note${KEYS.CTRL_J}please${KEYS.ESC}${KEYS.ENTER}now`);
    const asking = await terminal.waitFor(
      /⏸ write_file [\s\S]*note\.txt[\s\S]*needs approval[\s\S]*y approve · n deny/,
      {
        timeoutMs: 30_000,
        scope: 'all',
      },
    );
    expect(asking.text).toMatch(/turn 1 waiting for approval/);
    terminal.write('y');
    await terminal.waitFor(/The note is written\./, { timeoutMs: 30_000, scope: 'all' });
    await terminal.resize(60, 24);
    await terminal.waitFor((view) => view.lines.some((line) => /idle · Enter send/.test(line)), { timeoutMs: 10_000 });
    terminal.write(KEYS.CTRL_D);
    expect((await terminal.exited).exitCode).toBe(0);
    expect(terminal.output()).toContain(`detached; the session keeps everything: dh chat ${sessionId}`);

    const again = chat([sessionId]);
    const history = await again.waitFor(/The note is written\./, { timeoutMs: 20_000, scope: 'all' });
    expect(history.all).toMatch(/› you \(followup, turn 1\): \[c\] note\nplease\nnow\n/);
    expect(history.all).toMatch(/✓ approved c-w/);
    type(again, '[c] again');
    await again.waitFor(/Welcome back; nothing was lost\./, { timeoutMs: 30_000, scope: 'all' });
    // The screen shows the answer once it is logged; the turn's end is logged just after.
    await expect
      .poll(async () => turnEnds(await stack.store.read(sessionId)), { timeout: 15_000 })
      .toEqual(['1:completed', '2:completed']);
    const log = await stack.store.read(sessionId);
    expect(ofType(log, 'approval/decision').map((d) => [d.callId, d.decision])).toEqual([['c-w', 'approve']]);
    // The operator commands, between turns: the overview, the audit, and a fork to continue elsewhere.
    type(again, '/show');
    await again.waitFor(new RegExp(`session ${sessionId}`), { timeoutMs: 15_000, scope: 'all' });
    type(again, '/audit');
    await again.waitFor(/digests: \d+\/\d+ re-derive/, { timeoutMs: 30_000, scope: 'all' });
    type(again, '/fork');
    const forked = await again.waitFor(/forked at seq \d+ as (\S+): dh chat \1/, { timeoutMs: 30_000, scope: 'all' });
    const forkId = /forked at seq \d+ as (\S+):/.exec(forked.all)?.[1] ?? '';
    expect(turnEnds(await stack.store.read(forkId))).toEqual(['1:completed', '2:completed']);
    again.write(KEYS.CTRL_D);
    expect((await again.exited).exitCode).toBe(0);
  }, 150_000);
});
