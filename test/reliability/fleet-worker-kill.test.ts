// A worker SIGKILLed mid-stream while it holds every concurrency lease of a rate-limited provider account:
// 40 sessions on 2 worker processes (PostgreSQL store, shared limiter tables), 110 requests a minute and 3 calls
// in flight. The other calls wait out the dead worker's leases (30 s); when those expire, the waiting calls must
// go at the quota's pace: the provider answers no 429 and no second holds more than the quota lets through.
// The provider enforces the same 110 a minute (with its default 1 s burst): the strictest setting. The first
// sessions' answers stop mid-stream until released, so the kill always finds the worker holding every lease.
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { busiestWindow } from '../helpers/busiest-window.js';
import { startChildWorker, type ChildWorker } from '../helpers/child-worker.js';
import { startFleetRig } from '../helpers/fleet-rig.js';
import { TEST_MODEL } from '../helpers/session-harness.js';

const SESSIONS = 40;
const RPM = 110;
const MAX_CONCURRENT = 3;
/** The provider's burst: one second of the quota (the scripted provider's default, as OpenAI's). */
const BURST_S = 1;
/** The most requests the quota admits within one second: its burst plus a second's refill. */
const PER_SECOND = Math.floor((RPM / 60) * (BURST_S + 1));
const HOLD = 'dying-worker-streams';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a worker killed mid-stream holding the fleet’s concurrency leases', () => {
  it(`40 sessions, 2 workers, ${RPM} RPM, ${MAX_CONCURRENT} in flight: after its leases expire, no 429 and no burst`, async () => {
    const { provider, store, client, run, config, cleanups } = await startFleetRig({
      name: 'fleet-kill',
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        // The first sessions' answers stop after one chunk until released: the worker dies streaming them.
        replies: [
          {
            match: { lastUserContains: 'held' },
            text: 'a long answer, streamed in pieces',
            chunkSize: 4,
            hold: { afterChunks: 1, key: HOLD },
            repeat: MAX_CONCURRENT,
          },
        ],
        default: { text: 'ok.' },
      },
      quota: { requestsPerMinute: RPM, burstSeconds: BURST_S },
      fleetQuota: { requestsPerMinute: RPM, maxConcurrent: MAX_CONCURRENT },
      idleTimeoutMs: 60_000,
    });
    const workers: ChildWorker[] = [];
    cleanups.push(() => Promise.all(workers.map((w) => w.stop(3_000))));
    const chatCalls = () => provider.requests().filter((r) => r.path.endsWith('/chat/completions'));
    const until = async (what: string, done: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> => {
      const deadline = Date.now() + ms;
      while (!(await done())) {
        if (Date.now() > deadline) {
          throw new Error(
            `${what}: not within ${ms} ms; the provider received ${chatCalls().length} calls\n` +
              workers.map((w, i) => `worker #${i + 1}:\n${w.output()}`).join('\n'),
          );
        }
        await sleep(1_000);
      }
    };
    // Each session's log as read so far, read on from where it stopped: the provider runs in this process, and
    // reading whole logs over and over would stall it, bunching requests that reach it in time.
    const logs = new Map<string, SessionEvent[]>();
    const logOf = async (id: string): Promise<SessionEvent[]> => {
      const known = logs.get(id) ?? [];
      const more = await store.read(id, known.length).catch(() => [] as SessionEvent[]);
      const all = [...known, ...more];
      logs.set(id, all);
      return all;
    };
    const start = (sessionId: string, content: string) =>
      client.workflow.signalWithStart(agentSession, {
        workflowId: sessionWorkflowId(sessionId),
        taskQueue: run,
        args: [{ sessionId }],
        signal: followupSignal,
        signalArgs: [{ content, messageId: `${sessionId}-m1` }],
      });
    const ids = Array.from({ length: SESSIONS }, (_, i) => `${run}-s${i}`);
    cleanups.push(() =>
      Promise.all(ids.map((id) => client.workflow.getHandle(sessionWorkflowId(id)).terminate('test done'))),
    );

    // Worker A alone: the first sessions' calls take every lease, and their streams stop mid-answer.
    const dying = await startChildWorker(config);
    workers.push(dying);
    const held = ids.slice(0, MAX_CONCURRENT);
    await Promise.all(held.map((id) => start(id, `[${id}] held`)));
    await until('the held streams started', () => chatCalls().length === MAX_CONCURRENT);

    // Worker B joins, and every other session's step queues behind the leases.
    workers.push(await startChildWorker(config));
    const rest = ids.slice(MAX_CONCURRENT);
    await Promise.all(rest.map((id) => start(id, `[${id}] hello`)));
    const started = async (id: string) => (await logOf(id)).some((e) => e.type === 'step/start');
    await until('every step started', async () => (await Promise.all(rest.map(started))).every(Boolean));

    // A dies streaming; its leases expire 20 to 30 s later (its last renewal, plus the 30 s TTL).
    const killedAt = Date.now();
    dying.kill('SIGKILL');
    await dying.exited;
    provider.release(HOLD);

    const turnEnd = async (id: string): Promise<SessionEvent | undefined> =>
      (await logOf(id)).find((e) => e.type === 'turn/end');
    let ends: (SessionEvent | undefined)[] = [];
    await until(
      'every turn ended',
      async () => {
        ends = await Promise.all(ids.map(turnEnd));
        return ends.every((e) => e !== undefined);
      },
      180_000,
    );
    expect(ends.map((e) => (e?.type === 'turn/end' ? e.reason : e?.type))).toEqual(ids.map(() => 'completed'));

    const calls = chatCalls();
    const afterKill = calls.filter((r) => r.receivedAt > killedAt).map((r) => r.receivedAt);
    // The dead worker's leases held the cap until they expired: the waiting calls did wait under them.
    expect(Math.min(...afterKill) - killedAt).toBeGreaterThanOrEqual(15_000);
    // Then they went at the quota's pace: the provider refused none, and no second held more than it admits.
    const refused = provider.rateLimitedAt();
    const busiest = busiestWindow(
      calls.map((r) => r.receivedAt),
      1_000,
    );
    // For a failure: each call's time from its logged `request/sent` (its admission) to the provider, and the
    // last calls before the first 429s, as ms before it: `received/logged`.
    const loggedAt = new Map(
      ids.map((id) => [id, logs.get(id)?.find((e) => e.type === 'request/sent')?.at ?? Number.NaN] as const),
    );
    for (const id of held) loggedAt.delete(id); // sent twice, logged once: by the dead worker
    const timed = calls.map((r) => ({
      received: r.receivedAt,
      logged: loggedAt.get(/\[(fleet-kill-[^\]]+)\]/.exec(r.body)?.[1] ?? '') ?? Number.NaN,
    }));
    const lags = timed
      .map((c) => c.received - c.logged)
      .filter((lag) => Number.isFinite(lag))
      .sort((x, y) => x - y);
    const before429 = refused.slice(0, 3).map((at) =>
      timed
        .filter((c) => c.received <= at && c.received > at - 3_000)
        .slice(-5)
        .map((c) => `${c.received - at}/${c.logged - at}`)
        .join(' '),
    );
    console.log(
      `fleet kill: ${calls.length} calls, ${refused.length} × 429, busiest second ${busiest} ` +
        `(quota ${PER_SECOND}), first call ${Math.round((Math.min(...afterKill) - killedAt) / 1000)} s after the kill; ` +
        `logged-to-received ms: median ${lags[Math.floor(lags.length / 2)]}, max ${lags.at(-1)}` +
        (before429.length > 0 ? `; before the first 429s, received/logged ms: ${before429.join(' | ')}` : ''),
    );
    expect(refused).toEqual([]);
    expect(busiest).toBeLessThanOrEqual(PER_SECOND);
  }, 300_000);
});
