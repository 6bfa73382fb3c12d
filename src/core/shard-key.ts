// Which shard of a sharded store a session lives on: a stable hash of its tree's root, so a session, its
// subagents (whose ids extend their parent's, see delegation.ts) and their grandchildren share one shard.
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';

/** Names the function below; stored in every shard's map, so a change to it can never go unnoticed. */
export const SHARD_HASH = 'sha256-root-v1';

/** A child's segment as childSessionIdFor writes it: `.d<turn>-<step>-<index>`, or `.d<24 hex>` when hashed. */
const CHILD_SEGMENT = /\.d(?:\d+-\d+-\d+|[0-9a-f]{24})(?=\.d|$)/;
/** What childSessionIdFor keeps of a parent whose child's id would be too long. */
const KEPT_PREFIX = 80;
/** A hashed child: the parent's first 80 characters, then `.d` and 24 hex digits. */
const HASHED_CHILD = new RegExp(`^([\\s\\S]{${KEPT_PREFIX}})\\.d[0-9a-f]{24}$`);

/**
 * The part of a session id its whole subagent tree shares: the id before its first child segment, at most
 * 80 characters. A hashed child keeps only its parent's first 80 characters; so the key of any id that long
 * is its first 80 characters without a tail that could be the start of a segment (`.`, `.d`, `.d1-2-`), as a
 * hashed child's would be. A top-level id that happens to look like a child's shares its shard with that
 * "parent": harmless, only the tree's locality matters (test/core/shard-key.property.test.ts).
 */
export function shardKeyOf(sessionId: string): string {
  let id = HASHED_CHILD.exec(sessionId)?.[1] ?? sessionId;
  // Cut as a hashed descendant's id is cut, before looking for segments: what is left is what they all share.
  if (id.length >= KEPT_PREFIX) id = id.slice(0, KEPT_PREFIX).replace(/\.(?:d[\d-]*)?$/, '');
  const segment = CHILD_SEGMENT.exec(id);
  return segment !== null ? id.slice(0, segment.index) : id;
}

/** The shard (0 … count-1) of `sessionId` in a store of `count` shards: the key's sha256, first 4 bytes. */
export function shardIndexOf(sessionId: string, count: number): number {
  if (!Number.isSafeInteger(count) || count < 1)
    throw new RangeError(`shard count must be a positive integer, got ${count}`);
  const digest = sha256(utf8ToBytes(shardKeyOf(sessionId)));
  const word = ((digest[0] ?? 0) << 24) | ((digest[1] ?? 0) << 16) | ((digest[2] ?? 0) << 8) | (digest[3] ?? 0);
  return (word >>> 0) % count;
}
