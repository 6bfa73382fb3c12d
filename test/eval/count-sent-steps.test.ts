// Which running steps of a `dh eval` run were sent, read from their eval logs in a real SQLite store: a step whose
// eval log holds the candidate's `request/sent` is in flight; one whose log is only seeded (its seed carries the
// source's earlier requests), or not written yet, still waits (a model slot, its budget check, the limiter).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRequestHeader, type Session } from '../../src/core/index.js';
import { countSentSteps } from '../../src/eval/count-sent-steps.js';
import { evalLogEvents, evalSessionIdFor, recordedSteps } from '../../src/eval/eval-log.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { LogDriver } from '../helpers/log-generator.js';

describe('countSentSteps', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-sent-steps-'));
  let store: SqliteSessionStore;
  beforeAll(() => {
    store = SqliteSessionStore.open(join(dir, 'sessions.db'));
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts the steps whose eval log holds the candidate request, not the seed', async () => {
    // A source with two answered steps: the second step's eval log carries the first step's request/sent.
    const source = new LogDriver('source').run([
      { kind: 'send', origin: 'followup', text: 'read a.txt' },
      { kind: 'step', toolCalls: 1, text: 'reading', changeHeader: false, skipLastTool: false },
      { kind: 'step', toolCalls: 0, text: 'done', changeHeader: false, skipLastTool: false },
    ]).session;
    const [, second] = recordedSteps(source.events);
    if (second === undefined) throw new Error('the source has no second step');
    const sentSeq = second.sent.seq;
    const seeded = (runId: string): Session => {
      const header = foldRequestHeader(source.events.slice(0, sentSeq));
      if (header === undefined) throw new Error('no header');
      return evalLogEvents(source, {
        evalSessionId: evalSessionIdFor(runId, 'source', sentSeq),
        runId,
        sentSeq,
        at: 1,
        header: { ...header, config: { ...header.config, model: 'another-model' } },
      });
    };
    const write = async (log: Session, sent: boolean): Promise<void> => {
      await store.create(log.sessionId, { createdAt: 1, parentSessionId: 'source' });
      const open = log.state.openStep;
      if (sent && open !== null)
        log.append({
          type: 'request/sent',
          at: 2,
          turn: open.turn,
          step: open.step,
          digest: `sha256:${'0'.repeat(64)}`,
          bytes: 1,
        });
      await store.append(log.sessionId, 0, log.events);
    };
    const waiting = seeded('waiting');
    expect(waiting.events.some((e) => e.type === 'request/sent' && e.seq < sentSeq)).toBe(true);
    await write(waiting, false);
    const inFlight = seeded('in-flight');
    await write(inFlight, true);
    const steps = [waiting, inFlight, seeded('not-written')].map((log) => ({ evalSessionId: log.sessionId, sentSeq }));

    const read = (id: string, fromSeq: number) => store.read(id, fromSeq);
    expect(await countSentSteps(read, steps)).toBe(1);
    expect(await countSentSteps(read, [])).toBe(0);
  });
});
