// A chaos run: planned trials, a few at a time, summed into tables (kills by kind, hits per failpoint,
// and the failure columns that must all be zero, plain and subagent trials apart), also for RELIABILITY.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { FAILPOINTS, type Failpoint } from '../../../src/activities/failpoints.js';
import { KILL_KINDS, planTrials, WORKER_FAILPOINTS, type KillKind } from './chaos-plan.js';
import { runTrial, type ChaosEnv } from './chaos-trial.js';
import { ZERO_COUNTS, type TrialCounts } from './trial-counts.js';
import { describePlan, type TrialResult } from './trial-result.js';

export interface ChaosRunOptions {
  readonly trials: number;
  readonly seed: number;
  /** Trials at once (each has its own dev server, provider, store and workers). */
  readonly concurrency: number;
  /** Only these trials of the plan (by index, below `trials`): to run a failed one again. */
  readonly only?: readonly number[];
}

/** What a set of trials (all, the plain ones, the subagent ones) adds up to. */
export interface PlanTotals {
  readonly trials: number;
  readonly kills: Readonly<Record<KillKind, number>>;
  /** Trials planned per kind. */
  readonly planned: Readonly<Record<KillKind, number>>;
  readonly hits: Readonly<Record<Failpoint, number>>;
  readonly counts: TrialCounts;
  /** Trials that did not finish (counted as failures). */
  readonly errors: number;
  readonly turnErrors: number;
  /** Delegation calls started, children checked, and kills that landed while a child ran, by kind. */
  readonly delegations: number;
  readonly children: number;
  readonly childKills: Readonly<Record<KillKind, number>>;
}

export interface ChaosSummary extends PlanTotals {
  readonly options: ChaosRunOptions;
  readonly results: readonly TrialResult[];
  readonly plain: PlanTotals;
  readonly subagents: PlanTotals;
  readonly audited: boolean;
  readonly wallMs: number;
  /**
   * Worker failpoints never hit, kill kinds never done (in all trials; in subagent trials each kind, and
   * each but continue-as-new while a child ran): a run that did not cover everything fails.
   */
  readonly uncovered: readonly string[];
  readonly ok: boolean;
}

export async function runChaos(env: ChaosEnv, options: ChaosRunOptions): Promise<ChaosSummary> {
  const started = Date.now();
  const plans = planTrials(options.trials, options.seed).filter(
    (p) => options.only === undefined || options.only.includes(p.index),
  );
  const results: TrialResult[] = [];
  let next = 0;
  const lane = async () => {
    while (next < plans.length) {
      const plan = plans[next++];
      if (plan) results.push(await runTrial(env, plan));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, plans.length)) }, lane));
  results.sort((a, b) => a.plan.index - b.plan.index);
  return summarize(options, results, Date.now() - started);
}

export function summarize(options: ChaosRunOptions, results: readonly TrialResult[], wallMs: number): ChaosSummary {
  const all = totals(results);
  const plain = totals(results.filter((r) => !r.plan.subagents));
  const subagents = totals(results.filter((r) => r.plan.subagents));
  const uncovered = [
    ...WORKER_FAILPOINTS.filter((f) => all.hits[f] === 0).map((f) => `failpoint ${f} never hit`),
    ...KILL_KINDS.filter((k) => all.kills[k] === 0).map((k) => `no ${k} kill`),
    ...(subagents.trials === 0
      ? ['no subagent trial']
      : [
          ...KILL_KINDS.filter((k) => subagents.kills[k] === 0).map((k) => `no ${k} kill in a subagent trial`),
          // A continue-as-new kill lands just after a turn's end: in a subagent trial, a child's last event.
          ...KILL_KINDS.filter((k) => k !== 'continue-as-new' && subagents.childKills[k] === 0).map(
            (k) => `no ${k} kill landed while a child ran`,
          ),
        ]),
  ];
  const failures = Object.values(all.counts).reduce((n, v) => n + v, 0);
  return {
    ...all,
    options,
    results,
    plain,
    subagents,
    audited: results.some((r) => r.audited),
    wallMs,
    uncovered,
    ok: failures === 0 && all.errors === 0 && all.turnErrors === 0 && uncovered.length === 0,
  };
}

function totals(results: readonly TrialResult[]): PlanTotals {
  const zero = <K extends string>(keys: readonly K[]) =>
    Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  const kills = zero(KILL_KINDS);
  const planned = zero(KILL_KINDS);
  const childKills = zero(KILL_KINDS);
  const hits = zero(FAILPOINTS);
  const counts: TrialCounts = { ...ZERO_COUNTS };
  for (const result of results) {
    planned[result.plan.kind]++;
    for (const kind of KILL_KINDS) kills[kind] += result.kills[kind];
    // A trial kills one kind (a failpoint chain's continue-as-new kill is none of its own).
    childKills[result.plan.kind] += result.childKills;
    for (const hit of result.hits) hits[hit]++;
    for (const key of Object.keys(counts) as Array<keyof TrialCounts>) counts[key] += result.counts[key];
  }
  return {
    trials: results.length,
    kills,
    planned,
    hits,
    counts,
    errors: results.filter((r) => r.error !== null).length,
    turnErrors: sum(results.map((r) => r.turnErrors)),
    delegations: sum(results.map((r) => r.delegations)),
    children: sum(results.map((r) => r.children)),
    childKills,
  };
}

/** The summary as Markdown tables (what the console prints and RELIABILITY.md holds). */
export function formatSummary(summary: ChaosSummary, command: string): string {
  const { subagents: sub } = summary;
  const failureRow = (name: string, t: PlanTotals) =>
    `| ${name} | ${t.trials} | ${t.counts.lost} | ${t.counts.duplicated} | ${t.counts.dangling} | ${t.counts.gate} | ` +
    `${t.counts.mirror} | ${summary.audited ? t.counts.audit : 'n/a'} | ${t.turnErrors} | ${t.errors} |`;
  const lines = [
    `Command: \`${command}\` — ${summary.results.length} trials (${sub.trials} of them subagent trials), seed ` +
      `${summary.options.seed}, ${summary.options.concurrency} at a time, ${(summary.wallMs / 60_000).toFixed(1)} min wall ` +
      `(median trial ${Math.round(median(summary.results.map((r) => r.durationMs)) / 1000)} s).`,
    '',
    '| kill kind | trials | kills | subagent trials | their kills | kills while a child ran |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...KILL_KINDS.map(
      (k) =>
        `| ${k} | ${summary.planned[k]} | ${summary.kills[k]} | ${sub.planned[k]} | ${sub.kills[k]} | ${sub.childKills[k]} |`,
    ),
    '',
    '| failpoint | hits | in subagent trials |',
    '| --- | ---: | ---: |',
    ...FAILPOINTS.map((f) => `| ${f} | ${summary.hits[f]} | ${sub.hits[f]} |`),
    '',
    '| plan | trials | lost | duplicated | dangling | gate failures | mirror disagreements | audit failures | turn errors | unfinished trials |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    failureRow('plain', summary.plain),
    failureRow('subagents', sub),
    failureRow('**all**', summary),
    '',
    `Sessions: ${sum(summary.results.map((r) => r.turns))} turns, ${sum(summary.results.map((r) => r.messages))} distinct ` +
      `messages, ${sum(summary.results.map((r) => r.events))} events, ` +
      `${sum(summary.results.map((r) => Math.max(0, r.runs - 1)))} continue-as-new hand-overs; subagent trials: ` +
      `${sub.delegations} delegation calls, ${sub.children} children checked.`,
    '',
    summary.uncovered.length > 0
      ? `Not covered: ${summary.uncovered.join('; ')}.`
      : 'Every kill kind and every failpoint was hit; in subagent trials every kill kind, and each but ' +
        'continue-as-new (which follows a turn end) while a child ran.',
    summary.ok ? 'Result: **all zeros**.' : 'Result: **FAILED** (see the problems listed by the run).',
  ];
  return lines.join('\n');
}

/** One line per failed trial and problem, for the console. */
export function formatProblems(summary: ChaosSummary): string[] {
  return summary.results.flatMap((r) => [
    ...(r.error !== null
      ? [`trial ${r.plan.index} (${describePlan(r.plan)}): did not finish: ${r.error.split('\n')[0]}`]
      : []),
    ...r.problems.map((p) => `trial ${r.plan.index} (${describePlan(r.plan)}): ${p}`),
  ]);
}

export const CHAOS_START = '<!-- chaos:start -->';
export const CHAOS_END = '<!-- chaos:end -->';
/** Inside the chaos region: where `npm run chaos` writes its table (the prose around it stays). */
export const RESULTS_START = '<!-- chaos:results:start -->';
export const RESULTS_END = '<!-- chaos:results:end -->';

/** Replaces what is between the results markers, inside the chaos region of `file`, with `body`. */
export function writeChaosResults(file: string, body: string): void {
  const text = readFileSync(file, 'utf8');
  const region = [text.indexOf(CHAOS_START), text.indexOf(CHAOS_END)] as const;
  const start = text.indexOf(RESULTS_START);
  const end = text.indexOf(RESULTS_END);
  if (region[0] === -1 || region[1] < region[0]) throw new Error(`${file}: the chaos region markers are missing`);
  if (start < region[0] || end > region[1] || end < start)
    throw new Error(`${file}: the chaos results markers are missing from the chaos region`);
  writeFileSync(file, `${text.slice(0, start + RESULTS_START.length)}\n${body}\n${text.slice(end)}`);
}

function sum(values: readonly number[]): number {
  return values.reduce((total, v) => total + v, 0);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
