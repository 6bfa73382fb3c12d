// Many senders at once: 1,000 sends from 4 client processes (followups, steers and injects; 10 % resent
// under the same message id; some through the `temporal` CLI binary) into one session whose scripted
// replies are instant. Every message must be claimed exactly once, each sender's order kept per queue,
// no duplicate logged twice. Then two SessionClients streaming followups into one session: the
// documented rule (RELIABILITY.md) — sends interleave, each client's order is kept, one turn per followup.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { SessionClient } from '../../src/client/session-client.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { stateQuery } from '../../src/shared/session-messages.js';
import { seededRandom } from '../helpers/chaos/chaos-plan.js';
import {
  runSenderProcess,
  type AckedMessage,
  type ChaosMessage,
  type MessageKind,
} from '../helpers/chaos/chaos-messages.js';
import { expectProviderSawTheLog, startHarness, type Harness } from '../helpers/session-harness.js';

/** Sizes (documented in RELIABILITY.md). */
const SENDERS = 4;
const SENDS_PER_SENDER = 250;
const DUPLICATE_SHARE = 0.1;
const CLI_SHARE = 0.05;
const KIND_WEIGHTS: ReadonlyArray<[MessageKind, number]> = [
  ['followup', 0.1],
  ['steer', 0.3],
  ['inject', 0.6],
];
const STREAMING_CLIENTS = 2;
const FOLLOWUPS_PER_CLIENT = 15;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** One sender's sends: fresh ids mostly, 10 % a resend of one of its earlier messages (same id, same content). */
function senderPlan(sender: number): ChaosMessage[] {
  const random = seededRandom(1_000 + sender);
  const sent: ChaosMessage[] = [];
  for (let n = 0; sent.length < SENDS_PER_SENDER; n++) {
    const earlier = sent.filter((m) => !sent.some((d) => d !== m && d.messageId === m.messageId));
    if (sent.length > 0 && random() < DUPLICATE_SHARE && earlier.length > 0) {
      const again = earlier[Math.floor(random() * earlier.length)] as ChaosMessage;
      sent.push({ ...again, through: 'client' });
      continue;
    }
    let pick = random();
    const kind = KIND_WEIGHTS.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? 'inject';
    const messageId = `p${sender}-${n}`;
    sent.push({
      kind,
      messageId,
      content: `[${messageId}] ${kind} number ${n} from sender ${sender}`,
      through: random() < CLI_SHARE ? 'cli' : 'client',
    });
  }
  return sent;
}

/** Ids in the order the log claimed them (within a claim, in its order). */
const claimOrder = (events: readonly SessionEvent[]) => ofType(events, 'inbox/claim').flatMap((e) => e.messageIds);

async function settle(h: Harness, sessionId: string, lastId: string, timeoutMs: number): Promise<SessionEvent[]> {
  const handle = h.client.workflow.getHandle(`session-${sessionId}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await h.store.read(sessionId);
    // A query fails while a workflow task is being retried (one that timed out on a loaded machine).
    const state = await handle.query(stateQuery).catch(() => null);
    const claimed = new Set(claimOrder(events));
    if (
      state !== null &&
      claimed.has(lastId) &&
      state.status === 'idle' &&
      state.queues.nextTurn === 0 &&
      state.queues.nextStep === 0 &&
      state.queues.notYetLogged === 0 &&
      state.head === events.length
    )
      return events;
    if (Date.now() > deadline) throw new Error(`the session never settled; state ${JSON.stringify(state)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('concurrency', () => {
  let h: Harness;
  beforeAll(async () => {
    // Instant replies: no tools, no streaming delay; the turn loop and the inbox are what is measured.
    h = await startHarness({ script: { replies: [{ text: 'ok', chunkSize: 64, repeat: 1_000_000 }] } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it(`${SENDERS * SENDS_PER_SENDER} sends from ${SENDERS} client processes at once: each claimed exactly once, each sender's order kept`, async () => {
    const sessionId = 'concurrency-1000';
    const handle = await h.start(sessionId, { maxStepsPerTurn: 1_000 });
    const plans = Array.from({ length: SENDERS }, (_, s) => senderPlan(s));
    const startedAt = Date.now();
    const acked: AckedMessage[][] = await Promise.all(
      plans.map((messages, s) =>
        runSenderProcess({
          address: inject('temporalAddress'),
          namespace: inject('temporalNamespace'),
          taskQueue: h.taskQueue,
          sessionId,
          messages,
          source: `sender-${s}`,
          cliPath: inject('temporalCliPath'),
        }),
      ),
    );
    const sentMs = Date.now() - startedAt;
    // A last followup after every sender finished: its turn claims whatever next-step messages remain.
    const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
    await sessions.followup(sessionId, '[flush] that is all', { messageId: 'flush' });
    const events = await settle(h, sessionId, 'flush', 120_000);
    const settledMs = Date.now() - startedAt;

    // Every send was acknowledged; the duplicates among them are logged once.
    expect(acked.map((a) => a.length)).toEqual(plans.map((p) => p.length));
    const unique = new Map(plans.flat().map((m) => [m.messageId, m]));
    unique.set('flush', { kind: 'followup', messageId: 'flush', content: '' });
    const enqueued = ofType(events, 'inbox/enqueue').map((e) => e.messageId);
    expect(enqueued.length).toBe(unique.size);
    expect(new Set(enqueued).size).toBe(unique.size);
    const claimed = claimOrder(events);
    expect(claimed.length).toBe(unique.size); // claimed exactly once each, nothing left queued
    expect(new Set(claimed)).toEqual(new Set(unique.keys()));
    const transcript = ofType(events, 'user/message').flatMap((e) => (e.messageId !== undefined ? [e.messageId] : []));
    expect(transcript.length).toBe(new Set(transcript).size);

    // Per sender and per queue, claim order = send order (first sends; a resend changes nothing).
    const position = new Map(claimed.map((id, i) => [id, i]));
    for (const messages of plans) {
      const firsts = messages.filter((m, i) => messages.findIndex((x) => x.messageId === m.messageId) === i);
      for (const target of ['next-turn', 'next-step'] as const) {
        const sent = firsts.filter((m) => (m.kind === 'followup') === (target === 'next-turn')).map((m) => m.messageId);
        const byClaim = [...sent].sort((a, b) => (position.get(a) ?? -1) - (position.get(b) ?? -1));
        expect(byClaim, `${target} order of ${sent[0]?.split('-')[0]}`).toEqual(sent);
      }
    }
    // One turn per followup: no claim holds two next-turn messages.
    const followups = new Set([...unique.values()].filter((m) => m.kind === 'followup').map((m) => m.messageId));
    for (const claim of ofType(events, 'inbox/claim'))
      expect(claim.messageIds.filter((id) => followups.has(id)).length).toBeLessThanOrEqual(1);
    expect(ofType(events, 'turn/end').every((e) => e.reason === 'completed' || e.reason === 'max-steps')).toBe(true);

    const mirror = await checkHistoryMirror(h.client, h.store, sessionId);
    expect(mirror.problem).toBeNull();
    await expectProviderSawTheLog(h, [sessionId]);
    const turns = ofType(events, 'turn/end').length;
    const steps = ofType(events, 'step/start').length;
    console.log(
      `concurrency: ${plans.flat().length} sends (${unique.size - 1} unique, ${plans.flat().filter((m) => m.through === 'cli').length} via the CLI) ` +
        `from ${SENDERS} processes acknowledged in ${sentMs} ms; settled in ${settledMs} ms: ${turns} turns, ${steps} steps, ` +
        `${events.length} events, ${mirror.runs} run(s)`,
    );
    await handle.terminate('done');
  }, 180_000);

  it(`${STREAMING_CLIENTS} SessionClients streaming followups into one session: interleaved, each client's order kept, one turn per followup`, async () => {
    const sessionId = 'concurrency-two-clients';
    await h.start(sessionId);
    const address = inject('temporalAddress');
    const connections = await Promise.all(
      Array.from({ length: STREAMING_CLIENTS }, () => Connection.connect({ address })),
    );
    try {
      const clients = connections.map(
        (connection) =>
          new SessionClient(new Client({ connection, namespace: inject('temporalNamespace') }), {
            taskQueue: h.taskQueue,
          }),
      );
      await Promise.all(
        clients.map(async (sessions, c) => {
          for (let n = 0; n < FOLLOWUPS_PER_CLIENT; n++)
            await sessions.followup(sessionId, `client ${c} followup ${n}`, { messageId: `c${c}-${n}` });
        }),
      );
      const events = await waitForLogIdle(h, sessionId, STREAMING_CLIENTS * FOLLOWUPS_PER_CLIENT);
      const claims = ofType(events, 'inbox/claim').map((e) => e.messageIds);
      // One turn per followup: each turn's one claim holds exactly one followup.
      expect(claims.every((ids) => ids.length === 1)).toBe(true);
      expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(
        Array.from({ length: STREAMING_CLIENTS * FOLLOWUPS_PER_CLIENT }, () => 'completed'),
      );
      const order = claims.flat();
      for (let c = 0; c < STREAMING_CLIENTS; c++) {
        const mine = order.filter((id) => id.startsWith(`c${c}-`));
        expect(mine).toEqual(Array.from({ length: FOLLOWUPS_PER_CLIENT }, (_, n) => `c${c}-${n}`));
      }
      // Interleaved: neither client's followups all ran before the other's started.
      const firstOf = (c: number) => order.findIndex((id) => id.startsWith(`c${c}-`));
      const lastOf = (c: number) => order.findLastIndex((id) => id.startsWith(`c${c}-`));
      console.log(
        `two clients: claim order ${order.map((id) => id.split('-')[0]).join('')} ` +
          `(client 0 spans ${firstOf(0)}..${lastOf(0)}, client 1 spans ${firstOf(1)}..${lastOf(1)})`,
      );
      await expectProviderSawTheLog(h, [sessionId]);
    } finally {
      await Promise.all(connections.map((c) => c.close()));
    }
  }, 90_000);
});

async function waitForLogIdle(h: Harness, sessionId: string, turns: number): Promise<SessionEvent[]> {
  const handle = h.client.workflow.getHandle(`session-${sessionId}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    // Tolerates a failing query, as `settle` does.
    const s = await handle.query(stateQuery).catch(() => null);
    if (s && s.status === 'idle' && s.turn === turns && s.queues.nextTurn === 0 && s.queues.notYetLogged === 0)
      return h.store.read(sessionId);
    if (Date.now() > deadline) throw new Error(`the session never went idle after ${turns} turns`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
