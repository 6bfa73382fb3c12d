// The CI-sized chaos run: the first trials of the plan (test/helpers/chaos/chaos-plan.ts), which between
// them kill a worker at each failpoint, around a continue-as-new and on a timer, the Temporal dev server,
// and one of two workers sharing PostgreSQL — in plain trials and again in subagent trials, killing while
// children run — and every failure column must stay at zero. `npm run chaos` runs the full version and
// writes its tables to RELIABILITY.md.
// Plus a regression the harness found: a `compact` update accepted just before a continue-as-new.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compactUpdate, followupSignal } from '../../src/shared/session-messages.js';
import { COVERING_TRIALS } from '../helpers/chaos/chaos-plan.js';
import { formatProblems, formatSummary, runChaos } from '../helpers/chaos/chaos-run.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { type Harness, startHarnessOnOwnServer, waitForState, waitForTurnEnd } from '../helpers/session-harness.js';
import { echoTool } from '../helpers/test-tools.js';

const CI_TRIALS = COVERING_TRIALS;
/**
 * Seven at a time, two waves: fourteen at once on two cores starve each other (connects time out, and a
 * stalled first model call is retried, so a subagent trial's parent answers without delegating).
 */
const CI_CONCURRENCY = 7;

describe('chaos (CI size)', () => {
  it(`${CI_TRIALS} trials covering every kill kind and failpoint: nothing lost, duplicated or dangling`, async () => {
    const summary = await runChaos(
      {
        cliPath: inject('temporalCliPath'),
        workflowBundlePath: inject('workflowBundlePath'),
        postgresUrl: inject('postgresUrl'),
        runId: `ci${Date.now().toString(36)}${process.pid.toString(36)}`,
        log: (line) => {
          if (/\] (done in|ERROR)|PROBLEM/.test(line)) console.log(line.split('\n')[0]);
        },
      },
      { trials: CI_TRIALS, seed: 1, concurrency: CI_CONCURRENCY },
    );
    console.log(formatSummary(summary, `vitest run test/reliability/chaos.test.ts`));
    expect(formatProblems(summary)).toEqual([]);
    expect(summary.uncovered).toEqual([]);
    expect(summary.ok).toBe(true);
  }, 300_000);
});

describe('regression: a compact update accepted right before a continue-as-new', () => {
  let h: Harness;
  beforeAll(async () => {
    // Continue-as-new suggested within any turn: every turn boundary hands over to a new run.
    h = await startHarnessOnOwnServer(
      { 'limit.historyCount.suggestContinueAsNew': 5 },
      {
        script: {
          mode: 'match',
          replies: [
            { match: { lastUserContains: 'Summarize the conversation' }, text: 'Summary: one short turn.', repeat: 10 },
            // Turn 2 streams for ~2 s: the update lands during its last (only) step.
            {
              match: { lastUserContains: 'turn 2' },
              text: 'a slow answer '.repeat(5),
              chunkSize: 4,
              chunkDelayMs: 100,
            },
            { text: 'ok', repeat: 100 },
          ],
        },
        tools: [echoTool],
      },
    );
  }, 120_000);
  afterAll(async () => h?.stop());

  it('is carried to the next run and compacts', async () => {
    const sessionId = 'compact-across-can';
    const handle = await h.start(sessionId, { keepRecentTurns: 1 });
    await handle.signal(followupSignal, { content: 'turn 1', messageId: 'f1' });
    await waitForTurnEnd(h.store, sessionId, 1, 30_000);
    await handle.signal(followupSignal, { content: 'turn 2', messageId: 'f2' });
    await waitForLog(h.store, sessionId, (e) => e.some((x) => x.type === 'request/sent' && x.turn === 2), 'step 2.1');
    // Accepted while the turn's last step streams; at the turn boundary the run continues as new at once
    // (before its idle loop would compact). The request must travel with the hand-over.
    expect(await handle.executeUpdate(compactUpdate, { args: [{}] })).toEqual({ accepted: true });
    const events = await waitForLog(
      h.store,
      sessionId,
      (e) => e.some((x) => x.type === 'compact/end'),
      'the requested compaction',
      30_000,
    );
    expect(events.filter((e) => e.type === 'compact/end').map((e) => (e as { outcome: string }).outcome)).toEqual([
      'applied',
    ]);
    // Compacted after turn 2 ended, i.e. by the continued run.
    const turn2End = events.findIndex((e) => e.type === 'turn/end' && e.turn === 2);
    expect(turn2End).toBeGreaterThan(-1);
    expect(events.findIndex((e) => e.type === 'compact/start')).toBeGreaterThan(turn2End);
    await waitForState(handle, (s) => s.status === 'idle', 30_000);
  }, 90_000);
});
