// An eval report as the terminal shows it: one line per step (text similarity, tool calls, finish reason,
// tokens, cost and latency, recorded → candidate, and the judges), then the run's totals and what was not sent.
import type { EvalReport, EvalStepReport } from '../../eval/eval-report.js';
import type { NumberPair } from '../../eval/step-diff.js';
import { textTable } from '../text-table.js';

export function renderEvalReport(report: EvalReport): string {
  const lines: string[] = [];
  const { counts } = report;
  lines.push(
    `eval ${report.runId}: ${report.changeText}${report.mode === 'continue' ? ' (continued turns: each compared from the evaluated step to the end of its turn)' : ''}`,
    `${counts.steps} steps: ${counts.answered} answered, ${counts.skipped} skipped, ${counts.failed} failed; ` +
      `spent $${usd(report.spentUsd)}${report.budgetUsd !== null ? ` of $${report.budgetUsd}` : ''}`,
    report.beyondTheChange === 0
      ? `requests: every candidate equals its recorded request but for the change (${counts.answered} checked)`
      : `requests: ${report.beyondTheChange} candidate(s) differ from the recorded request beyond the change (a bug: report it)`,
    '',
  );
  const judges = report.judges.map((j) => j.judge);
  const answered = report.steps.filter((s) => s.diff !== null);
  if (answered.length > 0) {
    const rows = [
      [
        'SESSION',
        'STEP',
        ...(report.mode === 'continue' ? ['STEPS'] : []),
        'TEXT',
        'TOOL CALLS',
        'FINISH',
        'OUT TOKENS',
        'CACHED',
        'COST $',
        'LATENCY ms',
        ...judges.map((j) => j.toUpperCase()),
      ],
      ...answered.map((s) => stepRow(s, judges, report.mode === 'continue')),
    ];
    lines.push(...textTable(rows), '');
  }
  const t = report.totals;
  if (t.steps > 0) {
    lines.push(
      `text equal ${t.textEqual}/${t.steps}, tool calls equal ${t.toolCallsEqual}/${t.steps}, finish reason equal ${t.finishReasonEqual}/${t.steps}`,
      `text similarity: p50 ${fixed(t.textSimilarity.p50)}, p90 ${fixed(t.textSimilarity.p90)}, min ${fixed(t.textSimilarity.min)}`,
      `cost $${usd(t.costUsd.source)} → $${usd(t.costUsd.candidate)}; output tokens ${t.outputTokens.source} → ${t.outputTokens.candidate}; ` +
        `cached tokens ${t.cachedTokens.source} → ${t.cachedTokens.candidate}`,
      `latency p50 ${ms(t.latencyMs.source.p50)} → ${ms(t.latencyMs.candidate.p50)} ms, p90 ${ms(t.latencyMs.source.p90)} → ${ms(t.latencyMs.candidate.p90)} ms`,
    );
  }
  for (const j of report.judges) {
    lines.push(
      `judge ${j.judge}: mean ${fixed(j.mean)} over ${j.scored} step(s)${j.errors > 0 ? `, ${j.errors} error(s)` : ''}`,
    );
  }
  const notSent = report.steps.filter((s) => s.outcome.status !== 'answered');
  if (notSent.length > 0) {
    lines.push('');
    for (const s of notSent) {
      const { target } = s.outcome;
      lines.push(
        `${s.outcome.status} ${target.sourceSessionId} ${target.turn}.${target.step}: ${s.outcome.code !== undefined ? `${s.outcome.code}: ` : ''}${s.outcome.reason ?? ''}`,
      );
    }
  }
  lines.push(
    '',
    `each candidate is a log of its own: dh log <eval log>, dh audit <eval log> (e.g. ${report.steps.find((s) => s.diff)?.outcome.target.evalSessionId ?? '-'})`,
  );
  return `${lines.join('\n')}\n`;
}

function stepRow(s: EvalStepReport, judges: readonly string[], continued: boolean): string[] {
  const d = s.diff;
  if (d === null) return [];
  const { target } = s.outcome;
  const calls = d.toolCallsEqual
    ? d.toolCalls.length === 0
      ? 'none'
      : `same (${d.toolCalls.length})`
    : d.toolCalls
        .filter((c) => c.verdict !== 'same')
        .map((c) => `${c.index}:${c.verdict}`)
        .join(' ');
  const verdicts = new Map((s.outcome.judges ?? []).map((j) => [j.judge, j]));
  return [
    target.sourceSessionId,
    `${target.turn}.${target.step}`,
    ...(continued ? [s.outcome.steps ? `${s.outcome.steps.source}→${s.outcome.steps.candidate}` : '-'] : []),
    d.textEqual ? 'equal' : fixed(d.textSimilarity),
    calls,
    d.finishReason.equal
      ? String(d.finishReason.source)
      : `${String(d.finishReason.source)}→${String(d.finishReason.candidate)}`,
    pair(d.outputTokens, String),
    pair(d.cachedTokens, String),
    pair(d.costUsd, usd),
    pair(d.latencyMs, (v) => String(Math.round(v))),
    ...judges.map((name) => {
      const v = verdicts.get(name);
      return v === undefined ? '-' : v.score === null ? 'error' : fixed(v.score);
    }),
  ];
}

function pair(p: NumberPair, show: (value: number) => string): string {
  const side = (v: number | null) => (v === null ? '-' : show(v));
  return `${side(p.source)}→${side(p.candidate)}`;
}

function usd(value: number): string {
  return value.toFixed(6);
}

function fixed(value: number | null): string {
  return value === null ? '-' : value.toFixed(2);
}

function ms(value: number | null): string {
  return value === null ? '-' : String(Math.round(value));
}
