// An eval run's report, re-derived from the logs: for each answered step, the recorded and the candidate
// answer as their logs hold them and the diff between them; per run, the totals and each judge's mean.
import type { SessionEvent } from '../core/events.js';
import type { EvalChange, EvalMode, EvalRunResult, EvalStepOutcome } from '../shared/eval-contracts.js';
import { describeEvalChange } from './eval-change.js';
import { answerFacts, candidateSentSeq, recordedStepAt, turnFacts } from './eval-log.js';
import { diffStep, diffTotals, type AnswerFacts, type DiffTotals, type StepDiff } from './step-diff.js';

export interface EvalStepReport {
  readonly outcome: EvalStepOutcome;
  readonly source: AnswerFacts | null;
  readonly candidate: AnswerFacts | null;
  readonly diff: StepDiff | null;
  /** Both requests are equal but for the declared change (null when the step was not answered). */
  readonly onlyTheChange: boolean | null;
}

export interface JudgeSummary {
  readonly judge: string;
  readonly scored: number;
  readonly errors: number;
  readonly mean: number | null;
}

export interface EvalReport {
  readonly runId: string;
  readonly mode: EvalMode;
  readonly change: EvalChange;
  readonly changeText: string;
  readonly budgetUsd: number | null;
  readonly spentUsd: number;
  readonly counts: {
    readonly steps: number;
    readonly answered: number;
    readonly skipped: number;
    readonly failed: number;
  };
  /** Answered steps whose requests differ in more than the declared change: must be 0. */
  readonly beyondTheChange: number;
  readonly totals: DiffTotals;
  readonly judges: readonly JudgeSummary[];
  readonly steps: readonly EvalStepReport[];
}

export type LogReader = (sessionId: string) => Promise<readonly SessionEvent[]>;

export async function buildEvalReport(result: EvalRunResult, read: LogReader): Promise<EvalReport> {
  const sources = new Map<string, Promise<readonly SessionEvent[]>>();
  const readSource = (id: string) => {
    let events = sources.get(id);
    if (events === undefined) sources.set(id, (events = read(id)));
    return events;
  };
  const steps: EvalStepReport[] = [];
  for (const outcome of result.outcomes) {
    if (outcome.status !== 'answered') {
      steps.push({ outcome, source: null, candidate: null, diff: null, onlyTheChange: null });
      continue;
    }
    const { target } = outcome;
    // A continued run compares whole turns from the evaluated step; a single-step run, the one answer.
    const facts = (events: readonly SessionEvent[], seq: number) =>
      result.mode === 'continue' ? turnFacts(events, seq) : answerFacts(recordedStepAt(events, seq));
    const source = facts(await readSource(target.sourceSessionId), target.sentSeq);
    const evalEvents = await read(target.evalSessionId);
    const sent = candidateSentSeq(evalEvents);
    const candidate = sent !== null ? facts(evalEvents, sent) : null;
    steps.push({
      outcome,
      source,
      candidate,
      diff: source !== null && candidate !== null ? diffStep(source, candidate) : null,
      onlyTheChange: outcome.sourceInvariant !== undefined && outcome.sourceInvariant === outcome.candidateInvariant,
    });
  }
  const count = (status: EvalStepOutcome['status']) => result.outcomes.filter((o) => o.status === status).length;
  return {
    runId: result.runId,
    mode: result.mode ?? 'single-step',
    change: result.change,
    changeText: describeEvalChange(result.change),
    budgetUsd: result.budgetUsd,
    spentUsd: result.spentUsd,
    counts: {
      steps: result.outcomes.length,
      answered: count('answered'),
      skipped: count('skipped'),
      failed: count('failed'),
    },
    beyondTheChange: steps.filter((s) => s.onlyTheChange === false).length,
    totals: diffTotals(steps.flatMap((s) => (s.diff !== null ? [s.diff] : []))),
    judges: judgeSummaries(result.outcomes),
    steps,
  };
}

function judgeSummaries(outcomes: readonly EvalStepOutcome[]): JudgeSummary[] {
  const byJudge = new Map<string, { scores: number[]; errors: number }>();
  for (const outcome of outcomes) {
    for (const verdict of outcome.judges ?? []) {
      const entry = byJudge.get(verdict.judge) ?? { scores: [], errors: 0 };
      if (verdict.score === null) entry.errors++;
      else entry.scores.push(verdict.score);
      byJudge.set(verdict.judge, entry);
    }
  }
  return [...byJudge].map(([judge, { scores, errors }]) => ({
    judge,
    scored: scores.length,
    errors,
    mean: scores.length > 0 ? scores.reduce((a, b) => a + b, 0) / scores.length : null,
  }));
}
