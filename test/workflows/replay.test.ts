// Replays every committed workflow history (test/fixtures/histories, written by `npm run fixtures:record`)
// against today's workflow bundle: a change that alters the commands of a recorded run fails here, not in
// a session that has been running for weeks. A deliberately incompatible variant proves the check bites.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Worker,
  type ReplayResult,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleSessionWorkflows } from '../../src/local-stack/bundle-workflows.js';
import { bundleHasTracing, workflowTracingSinks } from '../../src/observability/workflow-tracing.js';
import { historyFromJSONObject } from '../helpers/scenario-runtime.js';

const HISTORIES = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const INCOMPATIBLE = fileURLToPath(new URL('../fixtures/incompatible-workflow/index.ts', import.meta.url));
/** Histories that do not replay across a telemetry switch (the known defect in the test below). */
const TRACING_SWITCH_BREAKS = ['duplicate-message-id.server-1.32.json', 'interrupt-downgraded-steer.server-1.32.json'];
/** Fewer means fixtures went missing: the check would pass by checking nothing. */
const MIN_FIXTURES = 35;

/** Histories carry no workflow id; the fixture's file name stands in, so a failure names its file. */
const fixtures = readdirSync(HISTORIES)
  .filter((file) => file.endsWith('.json'))
  .sort()
  .map((file) => ({
    workflowId: file,
    history: historyFromJSONObject(JSON.parse(readFileSync(join(HISTORIES, file), 'utf8'))),
  }));

async function replayAll(workflowBundle: WorkflowBundleOption): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  const replay = Worker.runReplayHistories({ workflowBundle, sinks: workflowTracingSinks() }, fixtures);
  for await (const result of replay) results.push(result);
  return results;
}

const describeFailure = (result: ReplayResult): string =>
  `${result.workflowId}: ${result.error?.name ?? 'Error'}: ${result.error?.message ?? ''}`;

/**
 * An inject that arrived after the run's first task: the variant's handler replaces the real one only then
 * (an inject held since the start is handled while the real workflow registers its handlers).
 */
const receivedInject = (history: History): boolean => {
  const events = history.events ?? [];
  const firstTaskDone = events.findIndex((e) => e.workflowTaskCompletedEventAttributes != null);
  return events.some(
    (e, index) => index > firstTaskDone && e.workflowExecutionSignaledEventAttributes?.signalName === 'inject',
  );
};

describe('workflow replay against committed histories', () => {
  it(`has at least ${MIN_FIXTURES} committed histories`, () => {
    expect(fixtures.length, `histories in ${HISTORIES}`).toBeGreaterThanOrEqual(MIN_FIXTURES);
  });

  it('replays every committed history with the current workflow code', async () => {
    const results = await replayAll({ codePath: inject('workflowBundlePath') });
    const failures = results.filter((r) => r.error !== undefined).map(describeFailure);
    if (failures.length > 0) {
      console.error(`replay failed for ${failures.length} committed histories:\n${failures.join('\n')}`);
    }
    expect(failures).toEqual([]);
    expect(results.map((r) => r.workflowId).sort()).toEqual(fixtures.map((f) => f.workflowId));
  });

  it('replays them with the tracing interceptors in the bundle too, but for a send update completed beside other commands', async () => {
    // Most fixtures were recorded without the interceptors, budget-refused with them: replaying each with and
    // (above) without them is what lets a worker turn OpenTelemetry on or off under running sessions. Known
    // defect (docs/observability.md): the SDK's inbound interceptor awaits before the `send` handler runs, so
    // its completion moves after the commands the same activation emits; a history where they share a
    // workflow task does not replay across the switch. This list must shrink to nothing when that is fixed.
    const { codePath } = await bundleSessionWorkflows(undefined, { tracing: true });
    expect(await bundleHasTracing(codePath)).toBe(true);
    expect(await bundleHasTracing(inject('workflowBundlePath'))).toBe(false);
    const results = await replayAll({ codePath });
    const failed = results.filter((r) => r.error !== undefined);
    expect(failed.map((r) => r.workflowId).sort(), failed.map(describeFailure).join('\n')).toEqual(
      TRACING_SWITCH_BREAKS,
    );
    for (const result of failed) {
      expect(result.error).toBeInstanceOf(DeterminismViolationError);
      expect(result.error?.message).toMatch(
        /does not handle (this event: )?HistoryEvent\(id: \d+, WorkflowExecutionUpdateCompleted\)/,
      );
    }
    expect(results).toHaveLength(fixtures.length);
  }, 120_000);

  describe('a deliberately incompatible workflow (injects dropped)', () => {
    let results: ReplayResult[];
    beforeAll(async () => {
      const { code } = await bundleWorkflowCode({ workflowsPath: INCOMPATIBLE, logger: new DefaultLogger('WARN') });
      results = await replayAll({ code });
    });

    it('fails with a determinism violation on every history that received an inject', () => {
      const exercised = fixtures.filter((f) => receivedInject(f.history)).map((f) => f.workflowId);
      expect(exercised.length, 'fixtures that exercise the changed path').toBeGreaterThan(0);
      for (const workflowId of exercised) {
        const result = results.find((r) => r.workflowId === workflowId);
        expect(result?.error, `${workflowId} should not replay`).toBeInstanceOf(DeterminismViolationError);
        if (result) console.log(`incompatible variant, as expected: ${describeFailure(result)}`);
      }
    });

    it('still replays the histories that never took that path (the failure is the change, not the bundle)', () => {
      const untouched = results.filter((r) => !receivedInject(fixtureHistory(r.workflowId)));
      expect(untouched.length).toBeGreaterThan(0);
      expect(untouched.filter((r) => r.error !== undefined).map(describeFailure)).toEqual([]);
    });
  });
});

function fixtureHistory(workflowId: string): History {
  const fixture = fixtures.find((f) => f.workflowId === workflowId);
  if (!fixture) throw new Error(`no fixture named ${workflowId}`);
  return fixture.history;
}
