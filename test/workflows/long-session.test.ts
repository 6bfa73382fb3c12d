// An unbounded session at CI size: many tool-using turns stay within the context window through
// compaction and within bounded histories through continue-as-new, and nothing is lost across runs.
// (The full 1,000-turn run is in the benchmark: npm run bench -- --only long.)
import { describe, expect, inject, it } from 'vitest';
import { runLongSession } from '../helpers/long-session.js';

describe('a long session', () => {
  it('runs 60 tool turns with compactions and continue-as-new, bounded and lossless', async () => {
    const report = await runLongSession({
      cliPath: inject('temporalCliPath'),
      workflowBundlePath: inject('workflowBundlePath'),
      turns: 60,
    });
    console.log(JSON.stringify(report));
    expect(report.completedTurns).toBe(60);
    expect(report.claimedInOrder).toBe(true);
    expect(report.mirrorProblem).toBeNull();
    expect(report.compactions).toBeGreaterThan(2);
    expect(report.continueAsNew).toBeGreaterThan(1);
    expect(report.maxRequestTokens).toBeLessThan(report.contextWindow);
    expect(report.maxHistoryEvents).toBeLessThan(800);
  }, 300_000);
});
