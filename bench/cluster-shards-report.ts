// The cluster bench's shard axis: steps/s and dh's store CPU per step with the store on one database and on
// 3 shard databases (one PostgreSQL server here), per shard, and how the sessions spread over the shards.
import { fmt, median, type BenchSection } from './measure.js';

/** The store's shard counts the bench compares (1: the single-database store). */
export const SHARD_COUNTS = [1, 3] as const;

export interface ShardRun {
  readonly shards: number;
  readonly stepsPerSecond: number;
  /** CPU ms per step of dh's store: every shard database's client backends together. */
  readonly storeCpuPerStep: number;
  /** The same per shard database, in shard order. */
  readonly perShardCpuPerStep: readonly number[];
  /** How many of the run's sessions each shard held. */
  readonly perShardSessions: readonly number[];
  /** Temporal's persistence database, for scale. */
  readonly temporalCpuPerStep: number;
  /** Store backends started during the run (new connections), all shards together. */
  readonly storeBackends: number;
  /** Store connections open at the run's end, all shards together. */
  readonly storeConnections: number;
}

export function shardSection(
  runs: readonly ShardRun[],
  setup: { sessions: number; steps: number; rounds: number; workers: number },
): BenchSection {
  const of = (shards: number) => runs.filter((r) => r.shards === shards);
  const base = median(of(1).map((r) => r.stepsPerSecond));
  const rows = SHARD_COUNTS.map((shards) => {
    const mine = of(shards);
    const rate = median(mine.map((r) => r.stepsPerSecond));
    const perShard = Array.from({ length: shards }, (_, i) => median(mine.map((r) => r.perShardCpuPerStep[i] ?? 0)));
    const spread = Array.from({ length: shards }, (_, i) => median(mine.map((r) => r.perShardSessions[i] ?? 0)));
    return (
      `| ${shards} | ${fmt(rate, 1)} | ${fmt(rate / base)}× | ${fmt(median(mine.map((r) => r.storeCpuPerStep)))} ms | ` +
      `${perShard.map((ms) => fmt(ms)).join(' / ')} ms | ${spread.join(' / ')} | ` +
      `${fmt(median(mine.map((r) => r.temporalCpuPerStep)))} ms | ${median(mine.map((r) => r.storeBackends))} | ` +
      `${median(mine.map((r) => r.storeConnections))} |`
    );
  });
  return {
    title: 'Sharded store: 1 vs 3 shards',
    command: 'npm run bench -- --only cluster',
    body: [
      `${setup.sessions} sessions of one ${setup.steps}-step turn on ${setup.workers} worker processes, the store on one`,
      'PostgreSQL database (1) or sharded over 3 databases of the same server (3: `DH_STORE` lists them). The',
      "shards share the server's cores here, so the figures to read are dh's store CPU per step (all shards",
      'together, and each shard alone) and steps/s not falling: nothing serializes across shards.',
      `Medians of ${setup.rounds} rounds, interleaved.`,
      '',
      "| shards | steps/s | vs 1 shard | dh store CPU per step | per shard | sessions per shard | Temporal's persistence CPU per step | store connections opened during the run | store connections open at its end |",
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
    ].join('\n'),
  };
}
