// What each chaos trial kills and when, drawn from a seed: the same seed gives the same plan. The
// first trials of every plan cover each kill kind and each failpoint, so a small run (CI) covers all.
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
const COVERING: ReadonlyArray<{ kind: KillKind; failpoints?: readonly WorkerFailpoint[] }> = [
  { kind: 'failpoint', failpoints: ['model-after-append', 'tool-after-append'] },
  { kind: 'failpoint', failpoints: ['tool-running', 'model-streaming'] },
  { kind: 'continue-as-new' },
  { kind: 'dev-server' },
  { kind: 'pg-worker' },
  { kind: 'failpoint', failpoints: ['compaction-summarizing'] },
  { kind: 'timer' },
  { kind: 'failpoint', failpoints: ['model-streaming', 'compaction-summarizing'] },
];

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
  const plans: TrialPlan[] = [];
  for (let index = 0; index < count; index++) {
    let kind: KillKind;
    let failpoints: readonly WorkerFailpoint[] = [];
    const covering = COVERING[index];
    if (covering) {
      kind = covering.kind;
      failpoints = covering.failpoints ?? [];
    } else {
      let pick = random();
      kind = WEIGHTS.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? 'timer';
      if (kind === 'failpoint') {
        // One or two, in the order the session reaches them.
        const first = WORKER_FAILPOINTS[Math.floor(random() * WORKER_FAILPOINTS.length)] ?? 'model-streaming';
        const second = random() < 0.5 ? WORKER_FAILPOINTS[Math.floor(random() * WORKER_FAILPOINTS.length)] : undefined;
        failpoints = second === undefined ? [first] : [first, second];
      }
    }
    plans.push({
      index,
      kind,
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
