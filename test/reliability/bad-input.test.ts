// Bad input, end to end: every way a caller, a model, an operator or a damaged disk can hand the harness
// something wrong, each refused with a stable code and a message that names what is wrong, the session
// left usable where that makes sense, and nothing lost or appended after a refusal. Runs on the test
// run's Temporal server with a real worker, the scripted provider and SQLite (see RELIABILITY.md).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import { DhError, ErrorCode, forkEvents, Session, type SessionEvent } from '../../src/core/index.js';
import { copyAttachments, readLogFile, renamedLog, toJsonl } from '../../src/operations/session-transfer.js';
import { apiKeyFromEnv, genericProfile, resolveProfile } from '../../src/providers/provider-profiles.js';
import { loadScript, ScriptErrorCode } from '../../src/scripted-provider/script.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import {
  approveUpdate,
  compactUpdate,
  followupSignal,
  injectSignal,
  MAX_CONTENT_PARTS,
  MAX_MESSAGE_CHARS,
  sendUpdate,
  stateQuery,
  steerSignal,
} from '../../src/shared/session-messages.js';
import { AttachmentStore } from '../../src/stores/attachment-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { createListDirTool } from '../../src/tools/list-dir.js';
import { createReadFileTool } from '../../src/tools/read-file.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import type { agentSession } from '../../src/workflows/session-workflow.js';
import { event, sampleLog } from '../helpers/event-builders.js';
import { startHarness, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { damageRow, rawRows } from './bad-input/store-surgery.js';

type Handle = WorkflowHandle<typeof agentSession>;

/** What a rejected update or failed call carries: the SDK error, its ApplicationFailure cause with the code. */
async function failureOf(promise: Promise<unknown>): Promise<{ type: string | undefined; message: string }> {
  try {
    await promise;
  } catch (error) {
    const cause = (error as { cause?: { type?: string; message?: string } }).cause;
    return { type: cause?.type, message: cause?.message ?? String(error) };
  }
  throw new Error('expected a refusal, the call succeeded');
}

async function dhErrorOf(run: () => unknown): Promise<DhError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof DhError) return error;
    throw error;
  }
  throw new Error('expected a DhError, nothing was thrown');
}

const types = (events: readonly SessionEvent[]) => events.map((e) => e.type);
const enqueued = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'inbox/enqueue' ? [e.content] : []));
const turnEnds = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
const toolResults = (events: readonly SessionEvent[]) =>
  events.flatMap((e) => (e.type === 'tool/result' ? [{ callId: e.callId, status: e.status, output: e.output }] : []));

/** Update events the workflow history holds (a validator's refusal must leave none). */
async function updatesInHistory(handle: Handle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateAdmittedEventAttributes,
  ).length;
}

const SECRET = 'outside-secret-bad-input';

/**
 * Exactly `chars` characters of content whose JSON form is longer (quotes, backslashes and newlines are
 * escaped there), in words the scripted provider answers ('alive').
 */
function escapingContent(chars: number): string {
  const unit = 'still alive? "quoted" \\ back\nslash ';
  return unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
}
/** Content of `count` one-letter text parts. */
const textParts = (count: number) => Array.from({ length: count }, () => ({ type: 'text' as const, text: 'a' }));

/** A valid 34-event log (two turns, tools, steers, replaces) of session `fixture-v1`, as `dh import` reads it. */
const FIXTURE_LOG = join(import.meta.dirname, '..', 'fixtures', 'logs', 'v1.jsonl');
const fixtureLog = (): SessionEvent[] =>
  readFileSync(FIXTURE_LOG, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as SessionEvent);

describe('bad input to a running session (real Temporal, scripted provider, SQLite)', () => {
  let h: Harness;
  let sessions: SessionClient;
  /** A directory outside every workspace, with a secret the model must never see. */
  let outside: string;
  const workspaces: string[] = [];
  const workspaceOf = (sessionId: string) => {
    const dir = join(tmpdir(), 'dh-workspaces', sessionId);
    workspaces.push(dir);
    return dir;
  };

  beforeAll(async () => {
    outside = realpathSync(mkdtempSync(join(tmpdir(), 'dh-bad-input-outside-')));
    writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'alive' }, text: 'still here', repeat: 100 },
          {
            match: { lastUserContains: 'garbled' },
            toolCalls: [{ id: 'g1', name: 'read_file', arguments: '{not json' }],
          },
          { match: { lastUserContains: 'garbled' }, text: 'carried on after garbled arguments' },
          {
            match: { lastUserContains: 'mismatched' },
            toolCalls: [{ id: 'm1', name: 'read_file', arguments: '{"file":"notes.txt","startLine":"one"}' }],
          },
          { match: { lastUserContains: 'mismatched' }, text: 'carried on after a schema mismatch' },
          {
            match: { lastUserContains: 'escape' },
            toolCalls: [
              { id: 'x1', name: 'read_file', arguments: '{"path":"../x"}' },
              { id: 'x2', name: 'write_file', arguments: '{"path":"../escaped-bad-input.txt","content":"pwned"}' },
              { id: 'x3', name: 'read_file', arguments: '{"path":"/etc/passwd"}' },
              { id: 'x4', name: 'read_file', arguments: '{"path":"link/secret.txt"}' },
              { id: 'x5', name: 'write_file', arguments: '{"path":"link/pwned.txt","content":"pwned"}' },
              { id: 'x6', name: 'list_dir', arguments: '{"path":"link"}' },
            ],
          },
          { match: { lastUserContains: 'escape' }, text: 'stayed inside' },
          {
            match: { lastUserContains: 'unknown tool' },
            toolCalls: [{ id: 'u1', name: 'rm_rf', arguments: '{"path":"/"}' }],
          },
          { match: { lastUserContains: 'unknown tool' }, text: 'carried on after an unknown tool' },
          { match: { lastUserContains: 'slow' }, text: 'a slow answer', delayMs: 2500, repeat: 5 },
          { match: { lastUserContains: 'first' }, text: 'one', repeat: 20 },
        ],
      },
      tools: [createReadFileTool(), createWriteFileTool(), createListDirTool()],
    });
    sessions = new SessionClient(h.client, { taskQueue: h.taskQueue, timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await h?.stop();
    rmSync(outside, { recursive: true, force: true });
    for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
    rmSync(join(tmpdir(), 'dh-workspaces', 'escaped-bad-input.txt'), { force: true });
  });

  /** A followup after the refusal still runs a turn, which completes and answers. */
  const expectStillUsable = async (handle: Handle, sessionId: string, turn: number) => {
    await handle.signal(followupSignal, { content: 'still alive?' });
    const events = await waitForTurnEnd(h.store, sessionId, turn);
    expect(turnEnds(events).at(-1)).toBe(`${turn}:completed`);
    expect(events.filter((e) => e.type === 'assistant/message').at(-1)).toMatchObject({ content: 'still here' });
    return events;
  };

  /** Starts a session and waits until its log is open (so the store can be read right away). */
  const open = async (sessionId: string): Promise<Handle> => {
    const handle = await h.start(sessionId);
    await waitForState(handle, (s) => s.head > 0);
    return handle;
  };

  // ---- invalid signal payloads: dropped, counted, named; the session goes on ----

  describe.each([
    ['signal-wrong-type', 'followup', 'content of the wrong type', { content: 42 }, /^followup: content: /],
    ['signal-no-content', 'followup', 'no content at all', { source: 'ops' }, /^followup: content: /],
    [
      'signal-unknown-field',
      'steer',
      'an unknown field',
      { content: 'hi', colour: 'red' },
      /^steer: Unrecognized key: "colour"$/,
    ],
    [
      'signal-too-large',
      'inject',
      `content larger than MAX_MESSAGE_CHARS (${MAX_MESSAGE_CHARS})`,
      { content: 'x'.repeat(MAX_MESSAGE_CHARS + 1) },
      new RegExp(`^inject: content: content is larger than ${MAX_MESSAGE_CHARS} characters$`),
    ],
    [
      'signal-too-many-parts',
      'followup',
      `content of more than MAX_CONTENT_PARTS (${MAX_CONTENT_PARTS}) parts`,
      { content: textParts(MAX_CONTENT_PARTS + 1) },
      new RegExp(`^followup: content: content has ${MAX_CONTENT_PARTS + 1} parts, more than ${MAX_CONTENT_PARTS}$`),
    ],
    [
      'signal-bad-message-id',
      'followup',
      'a messageId with characters outside [A-Za-z0-9._:-]',
      { content: 'hi', messageId: 'no spaces/or slashes' },
      /^followup: messageId: message ids use \[A-Za-z0-9\._:-\]$/,
    ],
  ] as const)('%s: %s signal with %s', (sessionId, name, _what, payload, rejection) => {
    it('is dropped and counted with a message naming the problem; a followup still runs a turn', async () => {
      const handle = await open(sessionId);
      const signal = name === 'followup' ? followupSignal : name === 'steer' ? steerSignal : injectSignal;
      await handle.signal(signal, payload);
      const state = await waitForState(handle, (s) => s.rejectedSignals === 1);
      expect(state.lastRejection).toMatch(rejection);
      expect(state.queues).toEqual({ nextTurn: 0, nextStep: 0, notYetLogged: 0 });
      expect(types(await h.store.read(sessionId))).toEqual(['session/start']);
      const events = await expectStillUsable(handle, sessionId, 1);
      // Nothing of the refused payload reached the log: the only message is the followup.
      expect(enqueued(events)).toEqual(['still alive?']);
      expect((await handle.query(stateQuery)).rejectedSignals).toBe(1);
    });
  });

  // ---- invalid update payloads: refused by the validators, before history ----

  it('send: invalid payloads are refused with INVALID_PAYLOAD naming the field; nothing in history or log', async () => {
    const handle = await open('send-invalid');
    const cases: Array<[unknown, RegExp]> = [
      [{ content: 'hi', target: 'sideways', wakeup: true }, /^invalid send: target: /],
      [{ content: 'hi', target: 'next-turn' }, /^invalid send: wakeup: /],
      [{ content: 'hi', target: 'next-turn', wakeup: true, priority: 'high' }, /Unrecognized key: "priority"/],
      [{ content: 'hi', target: 'next-turn', wakeup: true, expectedTurn: -1 }, /^invalid send: expectedTurn: /],
      [{ content: 42, target: 'next-turn', wakeup: true }, /^invalid send: content: /],
      [{ content: 'hi', target: 'next-turn', wakeup: true, messageId: 'a b' }, /^invalid send: messageId: /],
      [
        { content: textParts(MAX_CONTENT_PARTS + 1), target: 'next-turn', wakeup: true },
        new RegExp(
          `^invalid send: content: content has ${MAX_CONTENT_PARTS + 1} parts, more than ${MAX_CONTENT_PARTS}$`,
        ),
      ],
      ['just a string', /^invalid send: .*expected object/],
    ];
    for (const [payload, message] of cases) {
      const failure = await failureOf(sessions.send('send-invalid', payload as never));
      expect(failure, JSON.stringify(payload)).toMatchObject({ type: 'INVALID_PAYLOAD' });
      expect(failure.message, JSON.stringify(payload)).toMatch(message);
    }
    expect(await updatesInHistory(handle)).toBe(0);
    expect(types(await h.store.read('send-invalid'))).toEqual(['session/start']);
    const receipt = await sessions.send('send-invalid', { content: 'still alive?', target: 'next-turn', wakeup: true });
    expect(receipt).toMatchObject({ duplicate: false, position: 0, target: 'next-turn' });
    const events = await waitForTurnEnd(h.store, 'send-invalid', 1);
    expect(enqueued(events)).toEqual(['still alive?']);
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  it('send: content over MAX_MESSAGE_CHARS is refused by the validator; nothing reaches history or the log', async () => {
    const handle = await open('send-oversized');
    const huge = `${'y'.repeat(MAX_MESSAGE_CHARS)}!`;
    const failure = await failureOf(
      handle.executeUpdate(sendUpdate, { args: [{ content: huge, target: 'next-turn', wakeup: true }] }),
    );
    expect(failure).toEqual({
      type: 'INVALID_PAYLOAD',
      message: `invalid send: content: content is larger than ${MAX_MESSAGE_CHARS} characters`,
    });
    expect(await updatesInHistory(handle)).toBe(0);
    const history = JSON.stringify(await handle.fetchHistory());
    expect(history.length).toBeLessThan(MAX_MESSAGE_CHARS / 4); // the payload is not in it, in any encoding
    expect(types(await h.store.read('send-oversized'))).toEqual(['session/start']);
    // One character over is refused however it is made up; exactly at the limit is accepted: the limit
    // counts characters of content, not of its JSON form (quotes, backslashes and newlines count once).
    const overLimit = await failureOf(
      handle.executeUpdate(sendUpdate, {
        args: [{ content: escapingContent(MAX_MESSAGE_CHARS + 1), target: 'next-turn', wakeup: true }],
      }),
    );
    expect(overLimit).toEqual({
      type: 'INVALID_PAYLOAD',
      message: `invalid send: content: content is larger than ${MAX_MESSAGE_CHARS} characters`,
    });
    const atLimit = escapingContent(MAX_MESSAGE_CHARS);
    expect(atLimit).toHaveLength(MAX_MESSAGE_CHARS);
    expect(JSON.stringify(atLimit).length).toBeGreaterThan(MAX_MESSAGE_CHARS + 10_000);
    await handle.executeUpdate(sendUpdate, { args: [{ content: atLimit, target: 'next-turn', wakeup: true }] });
    const events = await waitForTurnEnd(h.store, 'send-oversized', 1);
    expect(enqueued(events)).toEqual([atLimit]);
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  it('signal: content of exactly MAX_MESSAGE_CHARS characters with quotes, backslashes and newlines is accepted; one more is refused', async () => {
    const handle = await open('signal-at-limit');
    await handle.signal(followupSignal, { content: escapingContent(MAX_MESSAGE_CHARS + 1) });
    const state = await waitForState(handle, (s) => s.rejectedSignals === 1);
    expect(state.lastRejection).toBe(`followup: content: content is larger than ${MAX_MESSAGE_CHARS} characters`);
    const atLimit = escapingContent(MAX_MESSAGE_CHARS);
    expect(JSON.stringify(atLimit).length).toBeGreaterThan(MAX_MESSAGE_CHARS + 10_000); // refused by the old rule
    await handle.signal(followupSignal, { content: atLimit });
    const events = await waitForTurnEnd(h.store, 'signal-at-limit', 1);
    expect(enqueued(events)).toEqual([atLimit]);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect((await handle.query(stateQuery)).rejectedSignals).toBe(1);
  });

  it('approve: an invalid payload is INVALID_PAYLOAD, a decision nobody asked for is NO_PENDING_APPROVAL; nothing logged', async () => {
    const handle = await open('approve-invalid');
    const invalid = await failureOf(
      handle.executeUpdate(approveUpdate, { args: [{ callId: 'c1', decision: 'maybe' } as never] }),
    );
    expect(invalid.type).toBe('INVALID_PAYLOAD');
    expect(invalid.message).toMatch(/^invalid approval: decision: /);
    const noCallId = await failureOf(handle.executeUpdate(approveUpdate, { args: [{ decision: 'approve' } as never] }));
    expect(noCallId).toMatchObject({ type: 'INVALID_PAYLOAD', message: expect.stringMatching(/callId/) as unknown });
    const nobodyAsked = await failureOf(
      handle.executeUpdate(approveUpdate, { args: [{ callId: 'call-nobody-asked', decision: 'approve' }] }),
    );
    expect(nobodyAsked).toEqual({
      type: 'NO_PENDING_APPROVAL',
      message: 'no tool call "call-nobody-asked" is waiting for approval',
    });
    expect(await updatesInHistory(handle)).toBe(0);
    expect(types(await h.store.read('approve-invalid'))).toEqual(['session/start']);
    const events = await expectStillUsable(handle, 'approve-invalid', 1);
    expect(events.some((e) => e.type === 'approval/decision')).toBe(false);
  });

  it('compact: an invalid payload is INVALID_PAYLOAD naming the field; no compaction starts', async () => {
    const handle = await open('compact-invalid');
    for (const [payload, message] of [
      [{ prune: 'yes' }, /^invalid compact request: prune: /],
      [{ summarize: true }, /^invalid compact request: .*Unrecognized key: "summarize"/],
    ] as const) {
      const failure = await failureOf(handle.executeUpdate(compactUpdate, { args: [payload as never] }));
      expect(failure.type).toBe('INVALID_PAYLOAD');
      expect(failure.message).toMatch(message);
    }
    expect(await updatesInHistory(handle)).toBe(0);
    const state = await handle.query(stateQuery);
    expect(state).toMatchObject({ status: 'idle', compactions: 0 });
    const events = await expectStillUsable(handle, 'compact-invalid', 1);
    expect(events.some((e) => e.type === 'compact/start')).toBe(false);
  });

  it('send: a failed expectedTurn precondition is TURN_PRECONDITION_FAILED naming both turns; nothing queued', async () => {
    const handle = await open('expected-turn');
    await handle.signal(followupSignal, { content: 'first' });
    await waitForTurnEnd(h.store, 'expected-turn', 1);
    const failure = await failureOf(
      sessions.send('expected-turn', { content: 'too late', target: 'next-turn', wakeup: true, expectedTurn: 5 }),
    );
    expect(failure).toEqual({
      type: 'TURN_PRECONDITION_FAILED',
      message: 'expected turn 5, the session is at turn 1',
    });
    expect(await updatesInHistory(handle)).toBe(0);
    expect((await handle.query(stateQuery)).queues).toEqual({ nextTurn: 0, nextStep: 0, notYetLogged: 0 });
    const receipt = await sessions.send('expected-turn', {
      content: 'still alive?',
      target: 'next-turn',
      wakeup: true,
      expectedTurn: 1,
    });
    expect(receipt.duplicate).toBe(false);
    const events = await waitForTurnEnd(h.store, 'expected-turn', 2);
    expect(enqueued(events)).toEqual(['first', 'still alive?']);
    expect(turnEnds(events)).toEqual(['1:completed', '2:completed']);
  });

  // ---- sessions that do not exist or no longer take messages ----

  it('SessionClient: a send, a followup or a state query to an unknown session is SESSION_NOT_FOUND; nothing is started', async () => {
    for (const call of [
      () => sessions.send('never-started', { content: 'hello?', target: 'next-turn', wakeup: true }),
      () => sessions.followup('never-started', 'hello?'),
      () => sessions.state('never-started'),
    ]) {
      const error = await dhErrorOf(call);
      expect(error.code).toBe('SESSION_NOT_FOUND');
      expect(error.message).toBe('session "never-started" does not exist (or is not running)');
      expect(error.details).toEqual({ sessionId: 'never-started' });
    }
    await expect(h.store.read('never-started')).rejects.toMatchObject({ code: ErrorCode.SessionNotFound });
    await expect(sessions.handle('never-started').describe()).rejects.toThrow(/not found/i);
  });

  it('SessionClient: a send, a followup or a steer to a closed session is SESSION_CLOSED; the log is unchanged', async () => {
    const handle = await open('closed');
    await handle.signal(followupSignal, { content: 'first' });
    await waitForTurnEnd(h.store, 'closed', 1);
    await sessions.close('closed');
    expect(await handle.result()).toMatchObject({ sessionId: 'closed', turns: 1, closedBy: 'close' });
    const before = await h.store.read('closed');
    for (const call of [
      () => sessions.send('closed', { content: 'one more', target: 'next-turn', wakeup: true }),
      () => sessions.followup('closed', 'one more'),
      () => sessions.steer('closed', 'one more'),
    ]) {
      const error = await dhErrorOf(call);
      expect(error.code).toBe('SESSION_CLOSED');
      expect(error.message).toBe('session "closed" is closed; resume it to send more');
    }
    expect(await h.store.read('closed')).toEqual(before);
  });

  it('a session that is closing refuses new messages (SESSION_CLOSED, counted signals) and still finishes its turn', async () => {
    const handle = await open('closing');
    await handle.signal(followupSignal, { content: 'slow' });
    await waitForState(handle, (s) => s.status === 'running');
    await sessions.close('closing');
    await waitForState(handle, (s) => s.closing);
    const failure = await failureOf(sessions.send('closing', { content: 'late', target: 'next-turn', wakeup: true }));
    expect(failure).toEqual({ type: 'SESSION_CLOSED', message: 'session "closing" is closing' });
    await handle.signal(steerSignal, { content: 'late steer' });
    const compact = await failureOf(handle.executeUpdate(compactUpdate, { args: [{}] }));
    expect(compact.type).toBe('SESSION_CLOSED');
    const state = await waitForState(handle, (s) => s.rejectedSignals === 1);
    expect(state.lastRejection).toBe('steer: the session is closing');
    expect(await handle.result()).toMatchObject({ turns: 1, closedBy: 'close' });
    const events = await h.store.read('closing');
    expect(enqueued(events)).toEqual(['slow']);
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  // ---- bad tool calls from the model: error results, the turn goes on ----

  it('tool arguments that are not JSON become an error result; the turn goes on and completes', async () => {
    const handle = await open('tool-garbled');
    workspaceOf('tool-garbled');
    await handle.signal(followupSignal, { content: 'garbled' });
    const events = await waitForTurnEnd(h.store, 'tool-garbled', 1);
    const [result] = toolResults(events);
    expect(result).toMatchObject({ callId: 'g1', status: 'error' });
    expect(result?.output).toMatch(/^The arguments are not valid JSON \(.+\)\. Send a JSON object\.$/);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(events.filter((e) => e.type === 'assistant/message').at(-1)).toMatchObject({
      content: 'carried on after garbled arguments',
    });
  });

  it('tool arguments that do not match the schema become an error result naming each field; the turn goes on', async () => {
    const handle = await open('tool-mismatch');
    workspaceOf('tool-mismatch');
    await handle.signal(followupSignal, { content: 'mismatched' });
    const events = await waitForTurnEnd(h.store, 'tool-mismatch', 1);
    const [result] = toolResults(events);
    expect(result).toMatchObject({ callId: 'm1', status: 'error' });
    expect(result?.output).toMatch(/^Invalid arguments for read_file: /);
    expect(result?.output).toContain('path: expected string');
    expect(result?.output).toContain('startLine: expected number');
    expect(result?.output).toContain('unknown field "file"');
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  it('paths escaping the workspace (`..`, absolute, symlink out) are refused as error results; nothing leaks or lands outside', async () => {
    const workspace = workspaceOf('tool-escape');
    mkdirSync(workspace, { recursive: true });
    symlinkSync(outside, join(workspace, 'link'));
    const handle = await open('tool-escape');
    await handle.signal(followupSignal, { content: 'escape' });
    const events = await waitForTurnEnd(h.store, 'tool-escape', 1);
    const results = toolResults(events);
    expect(results.map((r) => r.callId)).toEqual(['x1', 'x2', 'x3', 'x4', 'x5', 'x6']);
    const why = [
      /^Refused path "\.\.\/x": it leads outside the workspace\./,
      /^Refused path "\.\.\/escaped-bad-input\.txt": it leads outside the workspace\./,
      /^Refused path "\/etc\/passwd": it is absolute/,
      /^Refused path "link\/secret\.txt": it goes through a symlink that leads outside the workspace\./,
      /^Refused path "link\/pwned\.txt": it goes through a symlink that leads outside the workspace\./,
      /^Refused path "link": it goes through a symlink that leads outside the workspace\./,
    ];
    results.forEach((r, i) => {
      expect(r.status, r.callId).toBe('error');
      expect(r.output, r.callId).toMatch(why[i] as RegExp);
      expect(r.output, r.callId).not.toContain(SECRET);
    });
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(existsSync(join(outside, 'pwned.txt'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(existsSync(join(tmpdir(), 'dh-workspaces', 'escaped-bad-input.txt'))).toBe(false);
    expect(turnEnds(events)).toEqual(['1:completed']);
  });

  it('a call to a tool that does not exist becomes an error result naming it; the turn goes on', async () => {
    const handle = await open('tool-unknown');
    workspaceOf('tool-unknown');
    await handle.signal(followupSignal, { content: 'unknown tool' });
    const events = await waitForTurnEnd(h.store, 'tool-unknown', 1);
    expect(toolResults(events)).toEqual([{ callId: 'u1', status: 'error', output: 'Unknown tool "rm_rf".' }]);
    expect(turnEnds(events)).toEqual(['1:completed']);
    expect(events.filter((e) => e.type === 'assistant/message').at(-1)).toMatchObject({
      content: 'carried on after an unknown tool',
    });
  });

  // ---- a damaged log under a session ----

  /**
   * A session with one completed turn whose user message row is then damaged under the running worker
   * (which holds the session in its cache), and a followup that wakes it. Returns what the run ended with.
   */
  const damageUnderLiveSession = async (sessionId: string) => {
    const handle = await open(sessionId);
    await handle.signal(followupSignal, { content: 'first' });
    await waitForTurnEnd(h.store, sessionId, 1);
    const before = rawRows(h.storePath, sessionId);
    const seq = before.find((r) => r.type === 'user/message')?.seq ?? -1;
    damageRow(h.storePath, sessionId, seq, 'body', '{"seq":');
    await expect(h.store.read(sessionId)).rejects.toMatchObject({
      code: ErrorCode.InvalidEvent,
      details: { sessionId, seq },
    });
    const requestsBefore = h.provider.requests().length;
    await handle.signal(followupSignal, { content: 'first again' });
    // Settled: the run has ended, or it logged the end of turn 2 (the session went on over the damage).
    const deadline = Date.now() + 20_000;
    while ((await handle.describe()).status.name === 'RUNNING' && Date.now() < deadline) {
      if (rawRows(h.storePath, sessionId).some((r) => r.seq >= before.length && r.type === 'turn/end')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { status } = await handle.describe();
    const error =
      status.name === 'RUNNING'
        ? null
        : await handle.result().then(
            () => null,
            (e: unknown) => e,
          );
    return { before, seq, error, requestsSent: h.provider.requests().length - requestsBefore };
  };

  it('a malformed row under a live session: the step fails with INVALID_EVENT naming session and seq; no request is sent and nothing is logged after the refusal', async () => {
    const { before, seq, error, requestsSent } = await damageUnderLiveSession('damaged-live');
    // The gate's fresh read refuses the log; the run cannot log past the damage, so it fails with that error:
    // the turn's end, a local activity (patch close-turn-local), refuses it too, and is the direct cause.
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause as { type?: string; message?: string } | undefined;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause?.type).toBe(ErrorCode.InvalidEvent);
    expect(cause?.message).toMatch(
      new RegExp(`^invalid event in session "damaged-live" at seq ${seq}: stored body is not JSON`),
    );
    expect(requestsSent).toBe(0);
    // No request/sent, no step/end, no turn/end: at most the step's opening rows, written before the refusal.
    const after = rawRows(h.storePath, 'damaged-live').slice(before.length);
    expect(after.map((r) => r.type)).not.toContain('request/sent');
    expect(after.map((r) => r.type)).not.toContain('step/end');
    expect(after.map((r) => r.type)).not.toContain('turn/end');
  });

  it('a malformed row in a stored log: a new run refuses it at open with INVALID_EVENT naming session and seq; nothing is appended', async () => {
    await h.store.create('damaged-cold', { createdAt: 1 });
    await h.store.append('damaged-cold', 0, renamedLog(fixtureLog(), 'damaged-cold'));
    damageRow(h.storePath, 'damaged-cold', 4, 'body', 'not json at all');
    const before = rawRows(h.storePath, 'damaged-cold');
    const handle = await h.start('damaged-cold');
    const error = await handle.result().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    // The session is opened by a local activity: its failure is the workflow's direct cause (no
    // ActivityFailure around it, as runs recorded with the openSession activity had).
    const cause = (error as WorkflowFailedError).cause as { type?: string; message?: string } | undefined;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause?.type).toBe(ErrorCode.InvalidEvent);
    expect(cause?.message).toMatch(/^invalid event in session "damaged-cold" at seq 4: stored body is not JSON/);
    expect(rawRows(h.storePath, 'damaged-cold')).toEqual(before);
  });
});

// ---- below the workflow: stores, attachments, scripts, configuration, the core ----

describe('bad input below the workflow', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dh-bad-input-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const storeWithLog = async (name: string) => {
    const path = join(dir, `${name}.db`);
    const store = SqliteSessionStore.open(path);
    await store.create(name, { createdAt: 1 });
    await store.append(name, 0, sampleLog(name, 2));
    return { path, store };
  };

  it('store: a row whose body is not JSON makes read refuse with INVALID_EVENT naming session and seq; the prefix stays readable', async () => {
    const { path, store } = await storeWithLog('row-not-json');
    try {
      damageRow(path, 'row-not-json', 5, 'body', '{"seq":5,"type":"assistant/mess');
      const error = await dhErrorOf(() => store.read('row-not-json'));
      expect(error).toMatchObject({ code: ErrorCode.InvalidEvent, details: { sessionId: 'row-not-json', seq: 5 } });
      expect(error.message).toMatch(/^invalid event in session "row-not-json" at seq 5: stored body is not JSON: /);
      // A read that ends before the damage is whole: nothing before it is lost.
      expect(types(await store.read('row-not-json', 0, 5))).toEqual(types(sampleLog('row-not-json', 2).slice(0, 5)));
      // Any read whose range covers it refuses: the bad row is never skipped.
      await expect(store.read('row-not-json', 3)).rejects.toMatchObject({ details: { seq: 5 } });
      await expect(store.read('row-not-json', 5, 6)).rejects.toMatchObject({ details: { seq: 5 } });
    } finally {
      await store.close();
    }
  });

  it("store: a row whose body breaks the event schema is refused naming the field, at the row's seq", async () => {
    const { path, store } = await storeWithLog('row-bad-schema');
    try {
      const body = JSON.parse(damageRow(path, 'row-bad-schema', 6, 'body', '{}')) as Record<string, unknown>;
      expect(body.type).toBe('assistant/message');
      damageRow(path, 'row-bad-schema', 6, 'body', JSON.stringify({ ...body, toolCalls: 'none' }));
      const error = await dhErrorOf(() => store.read('row-bad-schema'));
      expect(error).toMatchObject({ code: ErrorCode.InvalidEvent, details: { sessionId: 'row-bad-schema', seq: 6 } });
      expect(error.message).toBe(
        'invalid event in session "row-bad-schema" at seq 6: stored event: event.toolCalls: Invalid input: expected array, received string',
      );
    } finally {
      await store.close();
    }
  });

  it('store: a row whose digest column disagrees with its body is refused with INVALID_EVENT naming both digests', async () => {
    const { path, store } = await storeWithLog('row-bad-digest');
    try {
      const wrong = `sha256:${'0'.repeat(64)}`;
      const right = damageRow(path, 'row-bad-digest', 9, 'digest', wrong);
      const error = await dhErrorOf(() => store.read('row-bad-digest'));
      expect(error).toMatchObject({ code: ErrorCode.InvalidEvent, details: { sessionId: 'row-bad-digest', seq: 9 } });
      expect(error.message).toBe(
        `invalid event in session "row-bad-digest" at seq 9: stored body has digest ${right}, its row says ${wrong}`,
      );
      // Putting the right digest back restores the whole log: nothing was lost.
      damageRow(path, 'row-bad-digest', 9, 'digest', right);
      expect(await store.read('row-bad-digest')).toEqual(sampleLog('row-bad-digest', 2));
    } finally {
      await store.close();
    }
  });

  it('attachments: bytes that no longer match their digest are ATTACHMENT_CORRUPT naming both digests; a re-put repairs them', async () => {
    const attachments = new AttachmentStore(join(dir, 'attachments'));
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
      'base64',
    );
    const ref = await attachments.put(png, 'image/png');
    const file = join(attachments.root, 'sha256', ref.id.slice(7, 9), ref.id.slice(7));
    const damaged = Buffer.from(png);
    damaged[damaged.length - 1] = 0x00;
    writeFileSync(file, damaged);
    const error = await dhErrorOf(() => attachments.get(ref));
    expect(error.code).toBe(ErrorCode.AttachmentCorrupt);
    expect(error.message).toMatch(
      new RegExp(`^attachment ${ref.id} is corrupt: its bytes hash to sha256:[0-9a-f]{64}$`),
    );
    expect(error.details).toMatchObject({ id: ref.id });
    // An export copies what it can and names what it cannot, instead of copying damaged bytes.
    const target = new AttachmentStore(join(dir, 'exported'));
    const copied = await copyAttachments([ref], attachments, target);
    expect(copied).toEqual({ copied: 0, missing: [`${ref.id}: ${error.message}`] });
    // The original bytes put again replace the damaged copy.
    expect(await attachments.put(png, 'image/png')).toEqual(ref);
    expect(Buffer.from(await attachments.get(ref)).equals(png)).toBe(true);
  });

  it('scripted provider: a YAML syntax error is SCRIPT_INVALID naming the file and the line', async () => {
    const file = join(dir, 'broken-syntax.yaml');
    writeFileSync(file, 'models: [m]\nreplies:\n  - text: "unterminated\n  - text: fine\n');
    const error = await dhErrorOf(() => loadScript(file));
    expect(error.code).toBe(ScriptErrorCode.Invalid);
    expect(error.message).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: invalid YAML at line \\d+, column \\d+: `),
    );
    expect(error.message).not.toContain('\n');
    await expect(startScriptedProvider({ script: file })).rejects.toMatchObject({ code: ScriptErrorCode.Invalid });
  });

  it('scripted provider: a schema error is SCRIPT_INVALID naming the file and the JSON path of the first problem', async () => {
    const file = join(dir, 'broken-schema.yaml');
    writeFileSync(
      file,
      [
        'models: [m]',
        'replies:',
        '  - text: fine',
        '  - toolCalls: [{ id: c1, name: read_file, arguments: "{}" }, { id: c1, name: list_dir, arguments: "{}" }]',
        '  - fault: { kind: explode }',
        '',
      ].join('\n'),
    );
    const error = await dhErrorOf(() => loadScript(file));
    expect(error.code).toBe(ScriptErrorCode.Invalid);
    expect(error.message).toBe(
      `${file}: invalid script at $.replies[1].toolCalls[1].id: duplicate tool call id "c1" (and 1 more problem(s))`,
    );
    expect(error.details).toEqual({ file, path: '$.replies[1].toolCalls[1].id' });
    await expect(startScriptedProvider({ script: file })).rejects.toMatchObject({ code: ScriptErrorCode.Invalid });
  });

  describe.each([
    ['DH_BASE_URL', ['not a url', 'localhost:8080/v1', 'ftp://models.example/v1']],
    ['DH_API_KEY_ENV', ['my-key', 'deepseek_api_key', '1KEY', '']],
    ['DH_MODEL_CONCURRENCY', ['0', '-3', 'many', '2.5', '1001', '']],
    ['DH_SESSION_CACHE_MAX', ['0', '-1', 'lots', '2.5', '1000001', '']],
    ['DH_SESSION_CACHE_IDLE_MS', ['0', '-5', '10m', '1.5', 'Infinity', '']],
    ['DH_WORKFLOW_CACHE_MAX', ['-1', 'lots', '2.5', '1000001', '', ' 5']],
  ] as const)('worker configuration: a bad %s', (variable, values) => {
    it('is one INVALID_CONFIG line naming the variable', () => {
      for (const value of values) {
        let error: unknown;
        try {
          readWorkerConfig({ DH_PROVIDER: 'deepseek', [variable]: value });
        } catch (e) {
          error = e;
        }
        expect(error, `${variable}=${JSON.stringify(value)}`).toBeInstanceOf(DhError);
        expect((error as DhError).code).toBe('INVALID_CONFIG');
        expect((error as DhError).message, `${variable}=${JSON.stringify(value)}`).toMatch(
          new RegExp(`^invalid configuration: ${variable}: [^\\n]+$`),
        );
      }
      // The same variable with a good value reads.
      const good = {
        DH_BASE_URL: 'http://127.0.0.1:8080/v1',
        DH_API_KEY_ENV: 'MY_KEY',
        DH_MODEL_CONCURRENCY: '4',
        DH_SESSION_CACHE_MAX: '64',
        DH_SESSION_CACHE_IDLE_MS: '60000',
        DH_WORKFLOW_CACHE_MAX: '0',
      };
      expect(() => readWorkerConfig({ [variable]: good[variable] })).not.toThrow();
    });
  });

  it('a missing or blank API key is AUTH naming the variable (never a value)', async () => {
    const deepseek = resolveProfile('deepseek', {});
    for (const env of [{}, { DEEPSEEK_API_KEY: '' }, { DEEPSEEK_API_KEY: '   ' }, { OPENAI_API_KEY: 'sk-wrong-var' }]) {
      const error = await dhErrorOf(() => apiKeyFromEnv(deepseek, env));
      expect(error.code).toBe('AUTH');
      expect(error.message).toBe('no API key: set the environment variable DEEPSEEK_API_KEY for profile "deepseek"');
      expect(error.message).not.toContain('sk-wrong-var');
    }
    const generic = genericProfile({
      name: 'local',
      baseURL: 'http://127.0.0.1:8080/v1',
      apiKeyEnv: 'LOCAL_LLM_KEY',
      models: [{ id: 'm', contextWindow: 8192, vision: false, thinking: 'none' }],
    });
    const error = await dhErrorOf(() => apiKeyFromEnv(generic, {}));
    expect(error.message).toContain('LOCAL_LLM_KEY');
    expect(apiKeyFromEnv(generic, { LOCAL_LLM_KEY: 'k' })).toBe('k');
  });

  it('core: a fork at a seq inside an open turn is FORK_BOUNDARY naming the turn; the parent is untouched', async () => {
    const events = fixtureLog();
    const parent = new Session('fixture-v1', events);
    // Turn 1 is open from its turn/start (seq 2) to its turn/end (seq 22); turn 2 from seq 25 to 36.
    for (const [atSeq, turn] of [
      [3, 1],
      [12, 1],
      [22, 1],
      [26, 2],
      [36, 2],
    ] as const) {
      const error = await dhErrorOf(() => forkEvents(parent, { sessionId: 'fork-child', atSeq, at: 2 }));
      expect(error.code).toBe(ErrorCode.ForkBoundary);
      expect(error.message).toBe(
        `cannot fork session "fixture-v1" at seq ${atSeq}: turn ${turn} is open at that point`,
      );
      expect(error.details).toMatchObject({ sessionId: 'fixture-v1', atSeq });
    }
    for (const atSeq of [0, events.length + 1, 2.5]) {
      const error = await dhErrorOf(() => forkEvents(parent, { sessionId: 'fork-child', atSeq, at: 2 }));
      expect(error.code).toBe(ErrorCode.ForkBoundary);
      expect(error.message).toContain(`the boundary must be between 1 and ${events.length}`);
    }
    expect(parent.events).toEqual(events);
    // Between the turns the fork is fine.
    const fork = forkEvents(parent, { sessionId: 'fork-child', atSeq: 23, at: 2 });
    expect(fork).toHaveLength(24);
    expect(fork.at(-1)?.type).toBe('session/seed-end');
  });

  it('core: an import-style log with an invalid line is refused naming its seq (Session) and its line (dh import)', async () => {
    const events: unknown[] = fixtureLog();
    expect(() => new Session('fixture-v1', events)).not.toThrow();
    const broken = [...events];
    broken[20] = { ...(events[20] as SessionEvent), toolCalls: 'none' };
    const error = await dhErrorOf(() => new Session('fixture-v1', broken));
    expect(error).toMatchObject({ code: ErrorCode.InvalidEvent, details: { sessionId: 'fixture-v1', seq: 20 } });
    expect(error.message).toBe(
      'invalid event in session "fixture-v1" at seq 20: event.toolCalls: Invalid input: expected array, received string',
    );
    // A line copied from elsewhere (valid on its own, another seq) is named by where it stands.
    const shifted = [...events];
    shifted[6] = events[9];
    const moved = await dhErrorOf(() => new Session('fixture-v1', shifted));
    expect(moved).toMatchObject({ code: ErrorCode.InvalidEvent, details: { seq: 6 } });
    expect(moved.message).toBe('invalid event in session "fixture-v1" at seq 6: seq is 9, expected 6');
    // A structural break (a step of a turn that never started) names its seq.
    const orphan = [...(events as SessionEvent[]), event({ type: 'step/start', at: 3, turn: 3, step: 1 }, 37)];
    const structural = await dhErrorOf(() => new Session('fixture-v1', orphan));
    expect(structural.code).toBe(ErrorCode.LogStructure);
    expect(structural.details.seq).toBe(37);
    expect(structural.message).toMatch(/^session "fixture-v1" seq 37: /);
    // The import path names the file, the line and the seq, for a schema error and for a line that is not JSON.
    const file = join(dir, 'imported.jsonl');
    writeFileSync(file, toJsonl(broken as SessionEvent[]));
    const refused = await dhErrorOf(() => readLogFile(file));
    expect(refused.code).toBe('IMPORT_INVALID');
    expect(refused.message).toBe(
      `${file} line 21 (seq 20): event.toolCalls: Invalid input: expected array, received string`,
    );
    const lines = toJsonl(events as SessionEvent[]).split('\n');
    lines[3] = '{"seq":3,"type":"inbox/cl';
    writeFileSync(file, lines.join('\n'));
    const notJson = await dhErrorOf(() => readLogFile(file));
    expect(notJson).toMatchObject({ code: 'IMPORT_INVALID', details: { file, line: 4 } });
    expect(notJson.message).toMatch(new RegExp(` line 4: not JSON: `));
  });
});
