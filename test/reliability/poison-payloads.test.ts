// Poison payloads, sent by the real `temporal` CLI binary: a signal or update argument the workflow cannot
// decode (an unknown encoding, bytes that are not JSON, protobuf, a poison second argument) is refused and
// counted, and never fails a workflow task; `interrupt` and `close` act whatever they carry. The encrypted
// cases (an unknown key, a bad tag) are in payload-codec.test.ts.
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '../helpers/temporal-cli.js';
import { turnEnds } from '../helpers/log-views.js';
import { followupSignal, sessionWorkflowId, stateQuery } from '../../src/shared/session-messages.js';
import type { agentSession } from '../../src/workflows/session-workflow.js';
import { startHarness, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

type Handle = WorkflowHandle<typeof agentSession>;

interface Poison {
  readonly what: string;
  /** The CLI's input flags carrying `body` (a payload that would be valid as JSON) in the poisoned form. */
  readonly flags: (body: string) => string[];
  /** The refusal after `<name>: ` (signals) or `invalid <what>: ` (updates). */
  readonly reason: string;
}

const POISONS: readonly Poison[] = [
  {
    what: 'an unknown encoding',
    flags: (body) => ['--input-meta', 'encoding=weird/enc', '--input', body],
    reason: 'payload encoding "weird/enc" is not json/plain',
  },
  {
    // The CLI checks JSON inputs before it decodes base64, so `1234` passes as JSON and is sent as the
    // three bytes it decodes to (d7 6d f8): json/plain that is not JSON (nor UTF-8).
    what: 'bytes that are not JSON under json/plain',
    flags: () => ['--input-meta', 'encoding=json/plain', '--input-base64', '--input', '1234'],
    reason: 'payload is not JSON (encoding "json/plain")',
  },
  {
    what: 'a json/protobuf payload',
    flags: (body) => [
      '--input-meta',
      'encoding=json/protobuf',
      '--input-meta',
      'messageType=dh.Message',
      '--input',
      body,
    ],
    reason: 'payload encoding "json/protobuf" is not json/plain',
  },
  {
    what: 'a binary/protobuf payload',
    flags: () => [
      '--input-meta',
      'encoding=binary/protobuf',
      '--input-meta',
      'messageType=dh.Message',
      '--input-base64',
      '--input',
      Buffer.from([0x0a, 0x01, 0x78]).toString('base64'),
    ],
    reason: 'payload encoding "binary/protobuf" is not json/plain',
  },
  {
    what: 'a poison second argument',
    flags: (body) => [
      '--input',
      body,
      '--input',
      body,
      '--input-meta',
      'encoding=json/plain',
      '--input-meta',
      'encoding=weird/enc',
    ],
    reason: 'argument 2: payload encoding "weird/enc" is not json/plain',
  },
];

/** Workflow tasks that failed in the run's history (a poison payload must leave none). */
async function failedWorkflowTasks(handle: Handle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
}

/** Update events in the run's history (a validator's refusal leaves none). */
async function updatesInHistory(handle: Handle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateAdmittedEventAttributes,
  ).length;
}

describe('poison payloads from the temporal CLI (real Temporal, scripted provider, SQLite)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'still alive' }, text: 'still here', repeat: 100 },
          {
            match: { lastUserContains: 'stream slowly' },
            text: 'word '.repeat(200),
            chunkSize: 5,
            chunkDelayMs: 50,
          },
        ],
      },
    });
  });
  afterAll(async () => h?.stop());

  const open = async (sessionId: string): Promise<Handle> => {
    const handle = await h.start(sessionId);
    await waitForState(handle, (s) => s.head > 0);
    return handle;
  };

  /** A valid followup after the poison runs turn `turn` to completion. */
  const expectStillUsable = async (handle: Handle, sessionId: string, turn: number) => {
    await handle.signal(followupSignal, { content: `still alive after ${turn - 1} poisons?` });
    const events = await waitForTurnEnd(h.store, sessionId, turn);
    expect(turnEnds(events).at(-1)).toBe(`${turn}:completed`);
  };

  describe.each(['followup', 'steer', 'inject'] as const)('signal %s', (name) => {
    it('each poison payload is refused and counted, names its encoding, fails no workflow task; the session goes on', async () => {
      const sessionId = `poison-${name}`;
      const handle = await open(sessionId);
      for (const [i, poison] of POISONS.entries()) {
        const sent = await temporal(
          'workflow',
          'signal',
          '--workflow-id',
          sessionWorkflowId(sessionId),
          '--name',
          name,
          ...poison.flags(JSON.stringify({ content: `poison ${i}` })),
        );
        expect(sent, poison.what).toMatchObject({ code: 0 });
        const state = await waitForState(handle, (s) => s.rejectedSignals === i + 1);
        expect(state.lastRejection, poison.what).toBe(`${name}: ${poison.reason}`);
        expect(state.queues, poison.what).toEqual({ nextTurn: 0, nextStep: 0, notYetLogged: 0 });
        expect(await failedWorkflowTasks(handle), poison.what).toBe(0);
        await expectStillUsable(handle, sessionId, i + 1);
      }
      const events = await h.store.read(sessionId);
      // Only the valid followups reached the log.
      expect(events.flatMap((e) => (e.type === 'inbox/enqueue' ? [e.content] : []))).toEqual(
        POISONS.map((_, i) => `still alive after ${i} poisons?`),
      );
      expect((await handle.query(stateQuery)).rejectedSignals).toBe(POISONS.length);
      expect(await failedWorkflowTasks(handle)).toBe(0);
    });
  });

  describe.each([
    ['send', 'send', { content: 'poison', target: 'next-turn', wakeup: true }],
    ['approve', 'approval', { callId: 'c1', decision: 'approve' }],
    ['compact', 'compact request', { prune: true }],
  ] as const)('update %s', (name, what, body) => {
    it('each poison payload is refused with INVALID_PAYLOAD naming its encoding; nothing in history; the session goes on', async () => {
      const sessionId = `poison-update-${name}`;
      const handle = await open(sessionId);
      for (const [i, poison] of POISONS.entries()) {
        const refused = await temporal(
          'workflow',
          'update',
          'execute',
          '--workflow-id',
          sessionWorkflowId(sessionId),
          '--name',
          name,
          ...poison.flags(JSON.stringify(body)),
        );
        expect(refused.code, poison.what).not.toBe(0);
        // The CLI logs the failure's message and type in a quoted logfmt field (its quotes escaped).
        expect(refused.output.replaceAll('\\"', '"'), poison.what).toContain(
          `unable to update workflow: invalid ${what}: ${poison.reason} (type: INVALID_PAYLOAD, retryable: false)`,
        );
        expect(await updatesInHistory(handle), poison.what).toBe(0);
        expect(await failedWorkflowTasks(handle), poison.what).toBe(0);
        await expectStillUsable(handle, sessionId, i + 1);
      }
      expect(await handle.query(stateQuery)).toMatchObject({ rejectedSignals: 0, compactions: 0 });
    });
  });

  it('interrupt carrying poison payloads (several arguments, none decodable) still interrupts the running turn', async () => {
    const handle = await open('poison-interrupt');
    await handle.signal(followupSignal, { content: 'stream slowly' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    const sent = await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      sessionWorkflowId('poison-interrupt'),
      '--name',
      'interrupt',
      // Three arguments in base64: not JSON under json/plain, protobuf, an unknown encoding.
      '--input-base64',
      '--input',
      '1234',
      '--input',
      Buffer.from([0x0a, 0x01, 0x78]).toString('base64'),
      '--input',
      Buffer.from('{"reason":"stop"}').toString('base64'),
      '--input-meta',
      'encoding=json/plain',
      '--input-meta',
      'encoding=binary/protobuf',
      '--input-meta',
      'encoding=weird/enc',
    );
    expect(sent).toMatchObject({ code: 0 });
    const events = await waitForTurnEnd(h.store, 'poison-interrupt', 1);
    expect(turnEnds(events)).toEqual(['1:aborted']);
    expect(events.find((e) => e.type === 'assistant/message')).toMatchObject({ interrupted: true });
    // Not a refusal: interrupt takes no payload, so what it carried is ignored, not counted.
    expect((await handle.query(stateQuery)).rejectedSignals).toBe(0);
    expect(await failedWorkflowTasks(handle)).toBe(0);
    await expectStillUsable(handle, 'poison-interrupt', 2);
  });

  it('close carrying a poison payload still closes: the workflow completes', async () => {
    const handle = await open('poison-close');
    const sent = await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      sessionWorkflowId('poison-close'),
      '--name',
      'close',
      '--input-meta',
      'encoding=weird/enc',
      '--input',
      '{"reason":"done"}',
    );
    expect(sent).toMatchObject({ code: 0 });
    expect(await handle.result()).toMatchObject({ sessionId: 'poison-close', turns: 0, closedBy: 'close' });
    expect(await failedWorkflowTasks(handle)).toBe(0);
  });
});
