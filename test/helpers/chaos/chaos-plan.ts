// What each chaos trial kills and when, drawn from a seed: the same seed gives the same plan. The first
// trials cover each kill kind and each failpoint, in plain and in subagent trials, so a small run (CI) covers all.
import { FAILPOINTS, type Failpoint } from '../../../src/activities/failpoints.js';

/** The worker's own failpoints (continue-as-new is a kill kind of its own). */
export const WORKER_FAILPOINTS = FAILPOINTS.filter(
  (f): f is Exclude<Failpoint, 'continue-as-new'> => f !== 'continue-as-new',
);
export type WorkerFailpoint = (typeof WORKER_FAILPOINTS)[number];

export const KILL_KINDS = ['failpoint', 'continue-as-new', 'timer', 'dev-server', 'pg-worker'] as const;
export type KillKind = (typeof KILL_KINDS)[number];

export interface TrialPlan {
  readonly index: number;
  readonly kind: KillKind;
  /**
   * The subagent plan: `f1`'s first step delegates to two children (each calls echo and sleep or nap,
   * then answers) instead of calling the tools itself; the rest of the session is the same.
   */
  readonly subagents: boolean;
  /**
   * `timer`, `dev-server`, `pg-worker` in a subagent trial: when set, the kill comes this long after the
   * first child's log opened its first step instead of at `killAtMs` (children run for a second or so).
   */
  readonly childKillMs: number | null;
  /** `failpoint`: successive workers die at these, one each (the last replacement is unarmed). */
  readonly failpoints: readonly WorkerFailpoint[];
  /** `timer`, `dev-server`, `pg-worker`: the kill, this long after the first followup was accepted. */
  readonly killAtMs: number;
  /** `dev-server`: how long the server stays down before it restarts on its database file. */
  readonly downMs: number;
  /** `continue-as-new`: how long after the first `turn/end` append the worker dies. */
  readonly canDelayMs: number;
  /** `pg-worker`: which of the two workers dies. */
  readonly victim: 0 | 1;
  /** Pauses between the scripted sends, so messages land in different phases of the turns. */
  readonly gapsMs: readonly number[];
}

/** mulberry32: a small seeded generator, good enough to spread kill moments. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Chains whose second failpoint is reached whatever the first one did to the script: a kill after the
 * answer was logged does not re-ask the provider, so the step's tool calls still run.
 */
const COVERING: ReadonlyArray<{ kind: KillKind; failpoints?: readonly WorkerFailpoint[]; subagents?: true }> = [
  { kind: 'failpoint', failpoints: ['model-after-append', 'tool-after-append'] },
  { kind: 'failpoint', failpoints: ['tool-running', 'model-streaming'] },
  { kind: 'continue-as-new' },
  { kind: 'dev-server' },
  { kind: 'pg-worker' },
  { kind: 'failpoint', failpoints: ['compaction-summarizing'] },
  { kind: 'timer' },
  { kind: 'failpoint', failpoints: ['model-streaming', 'compaction-summarizing'] },
  // Subagent trials. The parent's first step calls no tool of its own, so the first tool failpoints are
  // reached inside the children: after a child's echo result, then mid-sleep/nap in the retried child step.
  { kind: 'failpoint', failpoints: ['tool-after-append', 'tool-running'], subagents: true },
  // The parent's answer logged, then the next stream is a child's first step.
  { kind: 'failpoint', failpoints: ['model-after-append', 'model-streaming'], subagents: true },
  // The first turn/end is a child's: the kill lands around the child's completion and its parent's wake-up.
  { kind: 'continue-as-new', subagents: true },
  { kind: 'timer', subagents: true },
  { kind: 'dev-server', subagents: true },
  { kind: 'pg-worker', subagents: true },
];

/** How many of the first trials cover every kind and failpoint (plain and subagent): the CI-sized run. */
export const COVERING_TRIALS = COVERING.length;

/** After the covering trials: the share of subagent trials. */
const SUBAGENT_SHARE = 0.4;

/** Weights of the kinds after the covering trials. */
const WEIGHTS: ReadonlyArray<[KillKind, number]> = [
  ['failpoint', 0.35],
  ['timer', 0.2],
  ['continue-as-new', 0.15],
  ['dev-server', 0.15],
  ['pg-worker', 0.15],
];

export function planTrials(count: number, seed: number): TrialPlan[] {
  const random = seededRandom(seed);
  const between = (min: number, max: number) => Math.round(min + random() * (max - min));
  // The subagent draws have a generator of their own: the plain trials' moments stay what they were.
  const subRandom = seededRandom(seed ^ 0x5ab5ab);
  const plans: TrialPlan[] = [];
  for (let index = 0; index < count; index++) {
    let kind: KillKind;
    let failpoints: readonly WorkerFailpoint[] = [];
    let subagents: boolean;
    const covering = COVERING[index];
    if (covering) {
      kind = covering.kind;
      failpoints = covering.failpoints ?? [];
      subagents = covering.subagents ?? false;
    } else {
      subagents = subRandom() < SUBAGENT_SHARE;
      let pick = random();
      kind = WEIGHTS.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? 'timer';
      if (kind === 'failpoint') {
        // One or two, in the order the session reaches them.
        const first = WORKER_FAILPOINTS[Math.floor(random() * WORKER_FAILPOINTS.length)] ?? 'model-streaming';
        const second = random() < 0.5 ? WORKER_FAILPOINTS[Math.floor(random() * WORKER_FAILPOINTS.length)] : undefined;
        failpoints = second === undefined ? [first] : [first, second];
      }
    }
    // Covering subagent trials always kill while children run; later ones do half the time.
    const fromChildren = subagents && (covering !== undefined || subRandom() < 0.5);
    const childKillMs = Math.round(subRandom() * 1_200);
    plans.push({
      index,
      kind,
      subagents,
      childKillMs: fromChildren && ['timer', 'dev-server', 'pg-worker'].includes(kind) ? childKillMs : null,
      failpoints,
      killAtMs: between(300, 6_000),
      downMs: between(100, 3_000),
      canDelayMs: between(0, 60),
      victim: random() < 0.5 ? 0 : 1,
      gapsMs: Array.from({ length: 6 }, () => between(0, 700)),
    });
  }
  return plans;
}
