// Prefix-cache simulation (pure: state in, hit counts out; no clock, no I/O). Given each request's
// canonical input tokens (canonical-tokens.ts) in arrival order it reports how many input tokens a
// provider would serve from its prefix cache, following the provider's published rules:
//
// DeepSeek, context caching on disk (https://api-docs.deepseek.com/guides/kv_cache, and the launch note
// https://api-docs.deepseek.com/news/news0802):
//   - A hit needs a persisted "cache prefix unit", and the request must contain that whole unit as its
//     prefix; partial overlap with a unit is a miss. Hits start at token 0 (prefix only).
//   - Units are persisted (1) at the end of each request's input and at the end of its output,
//     (2) at a common prefix the system detects between requests, (3) at fixed token intervals in
//     long inputs/outputs. A request cannot hit a unit that its own arrival created.
//   - Storage granularity is 64 tokens ("64 tokens as a storage unit; content less than 64 tokens will
//     not be cached"): a matched unit is counted as a hit rounded down to a multiple of 64 (the tail
//     of a partial block is a miss). The unit itself keeps its exact boundary, so a request that stops
//     matching inside a unit misses it whole, as in the guide's "A+B then A+C" example. The guide does
//     not publish the interval of rule (3); `intervalTokens` (default 1024) is this simulator's
//     assumption.
//   - Reported as `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` (= `prompt_tokens`).
//   The real cache is best-effort and takes seconds to build; the simulation persists immediately
//   and never evicts, so it is the upper bound a client can reach.
//
// OpenAI prompt caching (https://platform.openai.com/docs/guides/prompt-caching): only exact prefix
// matches hit; caching applies to prompts of 1024 tokens or more and hits grow in 128-token
// increments (cached_tokens is 0 or one of 1024, 1152, 1280, ...); reported as
// `usage.prompt_tokens_details.cached_tokens`. Here: the longest prefix shared with any earlier
// request's input, 0 below 1024, else rounded down to a multiple of 128.
//
// Both caches are partitioned by (model, tool list, system prompt): see CanonicalInput.key.
import type { CanonicalInput } from './canonical-tokens.js';

export {
  tokenCount,
  tokenize,
  canonicalInput,
  canonicalOutput,
  completionTokenCounts,
  type CanonicalInput,
} from './canonical-tokens.js';

export const DEEPSEEK_CACHE_UNIT_TOKENS = 64;
export const DEEPSEEK_CACHE_INTERVAL_TOKENS = 1024;
export const OPENAI_CACHE_MIN_TOKENS = 1024;
export const OPENAI_CACHE_INCREMENT_TOKENS = 128;

export type PrefixCacheMode = 'deepseek' | 'openai';

export interface PrefixCacheOptions {
  /** DeepSeek storage granularity (default 64). */
  readonly unitTokens?: number;
  /** DeepSeek fixed interval at which long inputs/outputs are cut into units (default 1024). */
  readonly intervalTokens?: number;
  /** OpenAI minimum cached prefix (default 1024). */
  readonly minTokens?: number;
  /** OpenAI hit increment (default 128). */
  readonly incrementTokens?: number;
}

export interface CacheLookup {
  readonly promptTokens: number;
  readonly hitTokens: number;
  readonly missTokens: number;
}

class TrieNode {
  readonly children = new Map<number, TrieNode>();
  /** A cache unit ends exactly at this node's depth. */
  unit = false;
  constructor(
    /** The edge into this node is `source[start:end]`. */
    readonly source: readonly number[],
    public start: number,
    readonly end: number,
  ) {}
}

/**
 * A radix trie of token sequences with unit marks at node boundaries. One walk gives both the longest
 * common prefix with every stored sequence and the deepest stored unit that is a prefix of the input,
 * in time linear in the input (a growing conversation shares one path, so memory stays near the
 * number of distinct tokens).
 */
export class TokenTrie {
  private readonly root = new TrieNode([], 0, 0);

  /** `lcp`: longest prefix shared with any stored sequence; `unitDepth`: deepest unit fully matched. */
  walk(tokens: readonly number[]): { lcp: number; unitDepth: number } {
    let node = this.root;
    let depth = 0;
    let unitDepth = 0;
    while (depth < tokens.length) {
      const child = node.children.get(tokens[depth]!);
      if (child === undefined) break;
      let i = child.start;
      while (i < child.end && depth < tokens.length && child.source[i] === tokens[depth]) {
        i++;
        depth++;
      }
      if (i < child.end) break;
      node = child;
      if (node.unit) unitDepth = depth;
    }
    return { lcp: depth, unitDepth };
  }

  /** Stores `tokens` and marks a unit at each depth in `units` (0 < depth <= length). */
  insert(tokens: readonly number[], units: Iterable<number> = []): void {
    let node = this.root;
    let depth = 0;
    while (depth < tokens.length) {
      const child = node.children.get(tokens[depth]!);
      if (child === undefined) {
        // Keep only the new tail: referencing `tokens` would keep every request's whole array alive.
        const tail = tokens.slice(depth);
        node.children.set(tokens[depth]!, new TrieNode(tail, 0, tail.length));
        break;
      }
      let i = child.start;
      let d = depth;
      while (i < child.end && d < tokens.length && child.source[i] === tokens[d]) {
        i++;
        d++;
      }
      node = i < child.end ? this.split(node, child, i) : child;
      depth = d;
    }
    for (const unit of units) {
      if (unit > 0 && unit <= tokens.length) this.boundaryAt(tokens, unit).unit = true;
    }
  }

  private split(parent: TrieNode, child: TrieNode, at: number): TrieNode {
    const mid = new TrieNode(child.source, child.start, at);
    child.start = at;
    mid.children.set(child.source[at]!, child);
    parent.children.set(mid.source[mid.start]!, mid);
    return mid;
  }

  /** The node ending at `depth` on the (stored) path of `tokens`, splitting an edge if needed. */
  private boundaryAt(tokens: readonly number[], depth: number): TrieNode {
    let node = this.root;
    let at = 0;
    while (at < depth) {
      const child = node.children.get(tokens[at]!);
      if (child === undefined) throw new Error('TokenTrie: path not stored');
      const length = child.end - child.start;
      if (at + length > depth) return this.split(node, child, child.start + (depth - at));
      node = child;
      at += length;
    }
    return node;
  }
}

/** Appends without spreading (long arrays would overflow the call stack). */
function concat(a: readonly number[], b: readonly number[]): number[] {
  const out = new Array<number>(a.length + b.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]!;
  for (let i = 0; i < b.length; i++) out[a.length + i] = b[i]!;
  return out;
}

export class PrefixCache {
  private readonly partitions = new Map<string, TokenTrie>();
  private readonly unitTokens: number;
  private readonly intervalTokens: number;
  private readonly minTokens: number;
  private readonly incrementTokens: number;

  constructor(
    readonly mode: PrefixCacheMode,
    options: PrefixCacheOptions = {},
  ) {
    this.unitTokens = options.unitTokens ?? DEEPSEEK_CACHE_UNIT_TOKENS;
    this.intervalTokens = options.intervalTokens ?? DEEPSEEK_CACHE_INTERVAL_TOKENS;
    this.minTokens = options.minTokens ?? OPENAI_CACHE_MIN_TOKENS;
    this.incrementTokens = options.incrementTokens ?? OPENAI_CACHE_INCREMENT_TOKENS;
    for (const [name, value] of Object.entries({
      unitTokens: this.unitTokens,
      intervalTokens: this.intervalTokens,
      minTokens: this.minTokens,
      incrementTokens: this.incrementTokens,
    })) {
      if (!Number.isInteger(value) || value <= 0)
        throw new RangeError(`PrefixCache: ${name} must be a positive integer`);
    }
  }

  /** What `process` would report for `input`, without changing the cache. */
  peek(input: CanonicalInput): CacheLookup {
    const trie = this.partitions.get(input.key);
    const { lcp, unitDepth } = trie ? trie.walk(input.tokens) : { lcp: 0, unitDepth: 0 };
    return this.lookup(input.tokens.length, lcp, unitDepth);
  }

  /**
   * Reports the hit for `input`, then persists what the request leaves behind. `output` is the
   * canonical output the model produced (DeepSeek persists a unit at its end); omit it when the
   * request produced no complete output.
   */
  process(input: CanonicalInput, output?: readonly number[]): CacheLookup {
    let trie = this.partitions.get(input.key);
    const isNew = trie === undefined;
    trie ??= new TokenTrie();
    if (isNew) this.partitions.set(input.key, trie);
    const { lcp, unitDepth } = trie.walk(input.tokens);
    const result = this.lookup(input.tokens.length, lcp, unitDepth);
    if (this.mode === 'openai') {
      trie.insert(input.tokens);
      return result;
    }
    const units = [input.tokens.length, ...this.intervals(input.tokens.length)];
    // Common-prefix detection: the longest prefix this request shares with an earlier one.
    if (!isNew && lcp > 0) units.push(lcp);
    trie.insert(input.tokens, units);
    if (output !== undefined && output.length > 0) {
      const full = concat(input.tokens, output);
      trie.insert(full, [full.length, ...this.intervals(full.length)]);
    }
    return result;
  }

  private lookup(promptTokens: number, lcp: number, unitDepth: number): CacheLookup {
    let hitTokens: number;
    if (this.mode === 'deepseek') {
      hitTokens = this.quantize(unitDepth);
    } else {
      hitTokens = lcp >= this.minTokens ? Math.floor(lcp / this.incrementTokens) * this.incrementTokens : 0;
    }
    return { promptTokens, hitTokens, missTokens: promptTokens - hitTokens };
  }

  private quantize(length: number): number {
    return Math.floor(length / this.unitTokens) * this.unitTokens;
  }

  private intervals(length: number): number[] {
    const out: number[] = [];
    for (let at = this.intervalTokens; at <= length; at += this.intervalTokens) out.push(at);
    return out;
  }
}
