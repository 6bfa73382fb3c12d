// The live side channel of a sharded store: each session's deltas go to the channel on its own shard's
// database (the shard its log lives on), so a shard down stops only its own sessions' streams.
import { shardIndexOf } from '../core/shard-key.js';
import type { DeltaChannel, LiveDelta, LiveDeltaDraft } from './delta-channel.js';

export class ShardedDeltaChannel implements DeltaChannel {
  private readonly shards: readonly DeltaChannel[];

  constructor(shards: readonly DeltaChannel[]) {
    if (shards.length === 0) throw new RangeError('a sharded delta channel needs at least one shard');
    this.shards = shards;
  }

  private on(sessionId: string): DeltaChannel {
    return this.shards[shardIndexOf(sessionId, this.shards.length)] as DeltaChannel;
  }

  publish(delta: LiveDeltaDraft): void {
    this.on(delta.sessionId).publish(delta);
  }

  async flush(): Promise<void> {
    await Promise.all(this.shards.map((shard) => shard.flush()));
  }

  /** Ids grow per shard; a session's deltas all come from its one shard, so its cursor only grows. */
  read(sessionId: string, afterId: number, limit?: number): Promise<LiveDelta[]> {
    return this.on(sessionId).read(sessionId, afterId, limit);
  }

  wait(sessionId: string, timeoutMs: number): Promise<void> {
    return this.on(sessionId).wait(sessionId, timeoutMs);
  }

  pruneBefore(sessionId: string, turn: number, step: number): Promise<number> {
    return this.on(sessionId).pruneBefore(sessionId, turn, step);
  }

  count(sessionId: string): Promise<number> {
    return this.on(sessionId).count(sessionId);
  }

  async close(): Promise<void> {
    await Promise.all(this.shards.map((shard) => shard.close()));
  }
}
