// `dh chat` in a real pseudo-terminal, typed at like a person would: a steer and a Tab-queued followup typed
// while the answer is held mid-stream show in their queues from the log before the answer ends, then in the
// transcript with where each entered; a message shows as being sent until the session logs it, never twice;
// Esc interrupts, its note lands below the partial answer, and a message typed right after is moved to the
// next turn, and the screen says so; an approval is decided inline; the terminal is resized; Ctrl-D detaches
// and `dh chat <session>` comes back with the history shown.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ESC_DELAY_MS } from '../../../src/cli/chat/chat-app.js';
import { approvalShortId } from '../../../src/core/approval-short-id.js';
import { renderScreenText, writeAsciicast } from '../../helpers/asciicast.js';
import { startChatStack, TEST_MODEL, type ChatStack } from '../../helpers/chat-stack.js';
import { freezeGroup, thawAll, thawGroup } from '../../helpers/freeze-group.js';
import { ofType, turnEnds } from '../../helpers/log-views.js';
import { KEYS, startPty, type PtyTerminal, type ScreenView } from '../../helpers/pty-terminal.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'chat');
const STORY = 'Once upon a time there was a session that streamed very slowly, word by word, on and on. '.repeat(6);
/** The streams the tests hold mid-way (the scripted provider's `hold`) until they `release` them. */
const HOLD = { look: 'a-look', story: 'b-story', closing: 'e-closing' } as const;

/** Watches the screens a test waits on: `twice` lists every one that showed one of `needles` more than once. */
function shownOnce(needles: readonly string[]) {
  const twice: string[] = [];
  return {
    twice,
    check: (view: ScreenView): ScreenView => {
      for (const needle of needles) if (view.text.split(needle).length > 2) twice.push(`${needle}:\n${view.text}`);
      return view;
    },
  };
}

/** Where each of `needles` first appears in `text`, failing on one that is missing. */
function positions(text: string, needles: readonly string[]): number[] {
  return needles.map((needle) => {
    const at = text.indexOf(needle);
    expect(at, `${needle} is shown`).toBeGreaterThanOrEqual(0);
    return at;
  });
}
const ascending = (values: readonly number[]) => [...values].sort((a, b) => a - b);

describe('dh chat in a pseudo-terminal', () => {
  let stack: ChatStack;
  const terminals: PtyTerminal[] = [];

  beforeAll(async () => {
    stack = await startChatStack({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          // (a) an answer held mid-stream until the test has seen the messages typed meanwhile in their queues.
          {
            match: { lastUserContains: '[a] look' },
            text: 'Looking around the workspace first, slowly, before I write it down. '.repeat(3),
            chunkSize: 3,
            hold: { afterChunks: 10, key: HOLD.look },
          },
          { match: { lastUserContains: 'LATE steer' }, text: 'Steered: I kept it short.' },
          { match: { lastUserContains: '[a] queued' }, text: 'The queued followup ran after the turn.' },
          // (b) a story held mid-stream until Esc ends it; the message typed after it starts turn 2.
          {
            match: { lastUserContains: '[b] story' },
            text: STORY,
            chunkSize: 3,
            hold: { afterChunks: 10, key: HOLD.story },
          },
          { match: { lastUserContains: '[b] after-esc' }, text: 'Short version: it ended.' },
          // (c) an approval decided inline, then a second visit.
          {
            match: { lastUserContains: '[c] note' },
            text: 'Writing the note.',
            toolCalls: [{ id: 'c-w', name: 'write_file', arguments: { path: 'note.txt', content: 'hello' } }],
          },
          { match: { lastUserContains: '[c] note' }, text: 'The note is written.' },
          { match: { lastUserContains: '[c] again' }, text: 'Welcome back; nothing was lost.' },
          // (d) a message typed while the worker cannot log it.
          { match: { lastUserContains: '[d] hello' }, text: 'Hello; your message was logged once.' },
          // (e) a turn held while the session is closing: what is typed meanwhile is refused.
          {
            match: { lastUserContains: '[e] last' },
            text: 'The last answer of a closing session.',
            chunkSize: 3,
            hold: { afterChunks: 6, key: HOLD.closing },
          },
        ],
      },
      env: { DH_APPROVAL_ASK: 'write_file' },
    });
  }, 120_000);

  // A failed assertion must not leave the worker stopped for the tests after it. (A held stream needs no
  // such care: it holds only its own session, and a release is for good, so none is released early.)
  afterEach(() => thawAll());

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
  /** `dh` starts from its sources through tsx when its build is stale: on a loaded machine that takes a while. */
  const STARTUP_MS = 60_000;
  const sessionOf = async (terminal: PtyTerminal) =>
    /new session (\S+):/.exec((await terminal.waitFor(/new session \S+:/, { timeoutMs: STARTUP_MS })).text)?.[1] ?? '';

  it('a steer and a Tab-queued followup typed while the answer streams show in their queues, then where each entered', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    const once = shownOnce(['[a] LATE steer', '[a] queued']);
    type(terminal, '[a] look around the workspace');
    await terminal.waitFor(/Looking around/, { timeoutMs: 30_000 });
    // The answer is held mid-stream: a steer (Enter) and a followup for after this turn (Tab), each shown in
    // its queue as the log has it, while the step still streams.
    type(terminal, '[a] LATE steer: keep it short');
    type(terminal, '[a] queued: then summarize', KEYS.TAB);
    const held = await terminal.waitFor(
      (view) =>
        /waiting for the next step: \[a\] LATE steer/.test(once.check(view).text) &&
        /waiting for the next turn: \[a\] queued/.test(view.text),
      { timeoutMs: 30_000 },
    );
    const during = await stack.store.read(sessionId);
    expect(ofType(during, 'inbox/enqueue').map((e) => e.origin)).toEqual(['followup', 'steer', 'followup']);
    expect(ofType(during, 'assistant/message')).toEqual([]);
    expect(held.text).toMatch(/Looking around/);
    expect(held.text).toMatch(
      /Looking around[\s\S]*waiting for the next step: \[a\] LATE steer[\s\S]*waiting for the next turn: \[a\] queued/,
    );
    expect(held.text).not.toMatch(/sending the/);
    expect(held.text).toMatch(/turn 1 answering… · Enter steer · Tab after this turn · Esc interrupt/);

    stack.provider.release(HOLD.look);
    const final = await terminal.waitFor(
      (view) =>
        /The queued followup ran after the turn\./.test(once.check(view).all) && / idle · Enter send/.test(view.text),
      { timeoutMs: 60_000 },
    );
    // Each moved from its queue into the transcript, saying where it entered, in the order it happened.
    const order = positions(final.all, [
      'Looking around the workspace first',
      '› you (steer, entered step 2): [a] LATE steer: keep it short',
      'Steered: I kept it short.',
      '■ turn 1 completed',
      '› you (followup, turn 2): [a] queued: then summarize',
      'The queued followup ran after the turn.',
    ]);
    expect(order).toEqual(ascending(order));
    expect(final.all.split('[a] LATE steer').length - 1).toBe(1);
    expect(final.all.split('[a] queued').length - 1).toBe(1);
    expect(final.text).not.toMatch(/waiting for the|sending the/);
    expect(once.twice).toEqual([]);

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

  it('a message shows as being sent until the session logs it, then only as logged', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    const once = shownOnce(['[d] hello']);
    // The worker is stopped: the session accepts the message, and nothing logs it until the worker goes on.
    expect(await freezeGroup(stack.worker.pid)).toBe(true);
    type(terminal, '[d] hello there');
    const sending = await terminal.waitFor(
      (view) => /⋯ sending the followup: \[d\] hello there/.test(once.check(view).text),
      { timeoutMs: 30_000 },
    );
    expect(sending.all).not.toMatch(/› you/);
    thawGroup(stack.worker.pid);
    const final = await terminal.waitFor(
      (view) =>
        /Hello; your message was logged once\./.test(once.check(view).all) && / idle · Enter send/.test(view.text),
      { timeoutMs: 60_000 },
    );
    expect(final.all).toMatch(/› you \(followup, turn 1\): \[d\] hello there/);
    expect(final.all.split('[d] hello').length - 1).toBe(1);
    expect(final.text).not.toMatch(/sending the|waiting for the/);
    expect(once.twice).toEqual([]);
    const log = await stack.store.read(sessionId);
    expect(ofType(log, 'inbox/enqueue')).toHaveLength(1);
    terminal.write(KEYS.CTRL_D);
    expect((await terminal.exited).exitCode).toBe(0);
  }, 150_000);

  it('a message typed while the session closes says it was refused, instead of showing as sent forever', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    type(terminal, '[e] last turn, please');
    await terminal.waitFor(/The last answer/, { timeoutMs: 30_000 });
    await stack.sessions.close(sessionId, 'test: closing');
    try {
      type(terminal, '[e] too late');
      const refused = await terminal.waitFor(
        /✗ not sent \(steer\): "\[e\] too late": the session refused it: the session is closing/,
        {
          timeoutMs: 30_000,
        },
      );
      expect(refused.text).not.toMatch(/⋯ sending the steer: \[e\] too late/);
    } finally {
      stack.provider.release(HOLD.closing);
    }
    expect(ofType(await stack.store.read(sessionId), 'inbox/enqueue').map((e) => e.content)).not.toContain(
      '[e] too late',
    );
    terminal.write(KEYS.CTRL_D);
    await terminal.exited;
  }, 150_000);

  it('Esc interrupts the streaming turn; a message typed right after moves to the next turn, and the screen says so', async () => {
    const terminal = chat();
    const sessionId = await sessionOf(terminal);
    type(terminal, '[b] story, please');
    // Held mid-stream: the story is on screen, and it cannot end before the Esc does.
    await terminal.waitFor(/Once upon a time/, { timeoutMs: 30_000 });
    terminal.write('[b] after-esc: the short version');
    await terminal.waitFor(/› \[b\] after-esc: the short version/);
    terminal.write(KEYS.ESC);
    const interrupting = await terminal.waitFor(/interrupting the turn/, {
      timeoutMs: ESC_DELAY_MS + 10_000,
      scope: 'all',
    });
    // The note is about the partial answer on screen: it is drawn below it, not printed above it.
    const [storyAt, noteAt] = positions(interrupting.all, ['Once upon a time', '⏹ interrupting the turn']);
    expect(noteAt).toBeGreaterThan(storyAt ?? Infinity);
    terminal.write(KEYS.ENTER);
    const downgraded =
      '↓ "[b] after-esc: the short version" came as the turn was being interrupted: it will start the next turn';
    const moved = await terminal.waitFor((view) => view.all.includes(downgraded) && /■ turn 1 aborted/.test(view.all), {
      timeoutMs: 30_000,
    });
    const note = '⏹ interrupting the turn… a message sent before it ends will start the next turn';
    const order = positions(moved.all, [
      'Once upon a time',
      note,
      '⏹ interrupted: the partial answer above is logged as interrupted',
      '■ turn 1 aborted',
    ]);
    expect(order).toEqual(ascending(order));
    // The move is logged once the interrupt is under way: after the note, wherever it lands around the answer.
    const [noteAgain, movedAt] = positions(moved.all, [note, downgraded]);
    expect(movedAt).toBeGreaterThan(noteAgain ?? Infinity);
    const ended = await terminal.waitFor(/Short version: it ended\./, { timeoutMs: 60_000, scope: 'all' });
    expect(ended.all).toMatch(
      /› you \(steer, moved to the next turn, turn 2\): \[b\] after-esc: the short version\nShort version: it ended\./,
    );

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
    const history = await again.waitFor(/The note is written\./, { timeoutMs: STARTUP_MS, scope: 'all' });
    expect(history.all).toMatch(/› you \(followup, turn 1\): \[c\] note\nplease\nnow\n/);
    expect(history.all).toContain(`✓ approved write_file [${approvalShortId('c-w')}]`);
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
