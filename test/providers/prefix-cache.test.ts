// The prefix-cache simulation on its own (no server): the token trie against a naive model, DeepSeek's
// unit rules (request-boundary units, common-prefix units, 64-token granularity, fixed intervals),
// OpenAI's 1024-minimum / 128-increment rule, partitions, and the canonical tokenization's prefix
// property that makes hits predictable.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../src/providers/chat-completion-request.js';
import {
  canonicalInput,
  canonicalOutput,
  PrefixCache,
  TokenTrie,
  tokenCount,
  tokenize,
} from '../../src/providers/prefix-cache.js';

const seq = (from: number, length: number): number[] => Array.from({ length }, (_, i) => from + i);
const input = (tokens: number[], key = 'k') => ({ key, tokens });

describe('TokenTrie', () => {
  it('agrees with a naive model on longest common prefix and deepest unit', () => {
    const tokens = fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 24 });
    const op = fc.record({ tokens, units: fc.array(fc.integer({ min: 0, max: 26 }), { maxLength: 4 }), probe: tokens });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const trie = new TokenTrie();
        const stored: number[][] = [];
        const units: number[][] = [];
        const lcp = (a: readonly number[], b: readonly number[]): number => {
          let i = 0;
          while (i < a.length && i < b.length && a[i] === b[i]) i++;
          return i;
        };
        for (const { tokens: t, units: u, probe } of ops) {
          const expectedLcp = Math.max(0, ...stored.map((s) => lcp(s, probe)));
          const expectedUnit = Math.max(
            0,
            ...units
              .filter((unit) => unit.length <= probe.length && lcp(unit, probe) === unit.length)
              .map((x) => x.length),
          );
          expect(trie.walk(probe)).toEqual({ lcp: expectedLcp, unitDepth: expectedUnit });
          trie.insert(t, u);
          stored.push(t);
          for (const depth of u) if (depth > 0 && depth <= t.length) units.push(t.slice(0, depth));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('DeepSeek rules', () => {
  it('a request that extends an earlier one hits the earlier input+output unit, cut to whole 64-token units', () => {
    const cache = new PrefixCache('deepseek');
    const first = seq(0, 130);
    const out = seq(1000, 70);
    expect(cache.process(input(first), out)).toEqual({ promptTokens: 130, hitTokens: 0, missTokens: 130 });
    // Units persist at the input end (130) and the output end (130 + 70 = 200); matching the whole
    // 200-token unit counts 192 tokens (whole 64-token blocks).
    const second = [...first, ...out, ...seq(2000, 40)];
    expect(cache.process(input(second), seq(3000, 10))).toEqual({ promptTokens: 240, hitTokens: 192, missTokens: 48 });
  });

  it('follows the guide example: A+B then A+C misses, then A is persisted and A+D hits A', () => {
    const cache = new PrefixCache('deepseek');
    const a = seq(0, 128);
    expect(cache.process(input([...a, ...seq(500, 50)])).hitTokens).toBe(0);
    expect(cache.process(input([...a, ...seq(600, 50)])).hitTokens).toBe(0);
    expect(cache.process(input([...a, ...seq(700, 50)])).hitTokens).toBe(128);
  });

  it('caches nothing shorter than 64 tokens, even for an identical request', () => {
    const cache = new PrefixCache('deepseek');
    expect(cache.process(input(seq(0, 63))).hitTokens).toBe(0);
    expect(cache.process(input(seq(0, 63))).hitTokens).toBe(0);
    const cache2 = new PrefixCache('deepseek');
    cache2.process(input(seq(0, 100)));
    expect(cache2.process(input(seq(0, 100))).hitTokens).toBe(64);
  });

  it('cuts long inputs into units at fixed intervals', () => {
    const cache = new PrefixCache('deepseek', { intervalTokens: 1024 });
    const long = seq(0, 2500);
    cache.process(input(long));
    // Shares 2100 tokens: the 2048 interval unit is the deepest whole unit it contains.
    expect(cache.process(input([...long.slice(0, 2100), ...seq(9000, 10)])).hitTokens).toBe(2048);
    const coarse = new PrefixCache('deepseek', { intervalTokens: 100_000 });
    coarse.process(input(long));
    expect(coarse.process(input([...long.slice(0, 2100), ...seq(9000, 10)])).hitTokens).toBe(0);
  });

  it('keeps partitions apart and peek() changes nothing', () => {
    const cache = new PrefixCache('deepseek');
    cache.process(input(seq(0, 256), 'a'));
    expect(cache.peek(input(seq(0, 300), 'b')).hitTokens).toBe(0);
    expect(cache.peek(input(seq(0, 300), 'a')).hitTokens).toBe(256);
    expect(cache.process(input(seq(0, 300), 'b')).hitTokens).toBe(0);
    const before = cache.peek(input(seq(0, 400), 'a'));
    expect(cache.peek(input(seq(0, 400), 'a'))).toEqual(before);
  });

  it('an output that the next request does not echo exactly gives no output-unit hit', () => {
    const cache = new PrefixCache('deepseek');
    const first = seq(0, 130);
    cache.process(input(first), seq(1000, 70));
    const edited = [...first, ...seq(1000, 69), 5, ...seq(2000, 40)];
    expect(cache.process(input(edited)).hitTokens).toBe(128);
  });
});

describe('OpenAI rules', () => {
  it('hits nothing below 1024 shared tokens, then the shared prefix rounded down to 128s', () => {
    const cache = new PrefixCache('openai');
    const base = seq(0, 1500);
    expect(cache.process(input(base)).hitTokens).toBe(0);
    expect(cache.process(input([...base.slice(0, 1000), ...seq(9000, 600)])).hitTokens).toBe(0);
    expect(cache.process(input([...base.slice(0, 1100), ...seq(8000, 600)])).hitTokens).toBe(1024);
    expect(cache.process(input([...base.slice(0, 1300), ...seq(7000, 600)])).hitTokens).toBe(1280);
    expect(cache.process(input(base)).hitTokens).toBe(1408);
    expect(cache.process(input(base, 'other')).hitTokens).toBe(0);
  });

  it('only ever reports 0 or 1024 + n * 128', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 8 }), (cuts) => {
        const cache = new PrefixCache('openai');
        const base = seq(0, 3000);
        for (const [i, cut] of cuts.entries()) {
          const hit = cache.process(input([...base.slice(0, cut), ...seq(10_000 * (i + 1), 5)])).hitTokens;
          expect(hit === 0 || (hit >= 1024 && hit % 128 === 0)).toBe(true);
          expect(hit).toBeLessThanOrEqual(cut);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('canonical tokenization', () => {
  const tools: ChatCompletionRequest['tools'] = [
    { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object' } } },
  ];
  const base = {
    model: 'deepseek-chat',
    tools,
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Read a.txt' },
    ],
  } satisfies Pick<ChatCompletionRequest, 'model' | 'messages' | 'tools'>;

  it('uses the real o200k_base tokenizer', () => {
    expect(tokenCount('hello world')).toBe(2);
    expect(tokenize('hello world')).toEqual([24912, 2375]);
    expect(tokenCount('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('a request that echoes the reply and appends messages extends the earlier token sequence exactly', () => {
    const turn = {
      content: 'Reading it.',
      reasoning: 'need the file',
      toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a.txt"}' }],
    };
    const next = {
      ...base,
      messages: [
        ...base.messages,
        {
          role: 'assistant' as const,
          content: turn.content,
          reasoning_content: turn.reasoning,
          tool_calls: [
            { id: 'c1', type: 'function' as const, function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
          ],
        },
        { role: 'tool' as const, tool_call_id: 'c1', content: 'hello' },
      ],
    };
    const first = canonicalInput(base);
    const second = canonicalInput(next);
    const output = canonicalOutput(turn);
    expect(second.key).toBe(first.key);
    expect(second.tokens.slice(0, first.tokens.length)).toEqual(first.tokens);
    expect(second.tokens.slice(first.tokens.length, first.tokens.length + output.length)).toEqual(output);
  });

  it('partitions by model, tool list and system prompt; an early edit changes early tokens', () => {
    const key = canonicalInput(base).key;
    expect(canonicalInput({ ...base, model: 'deepseek-reasoner' }).key).not.toBe(key);
    expect(canonicalInput({ ...base, tools: [] }).key).not.toBe(key);
    const otherSystem = {
      ...base,
      messages: [{ role: 'system' as const, content: 'You are verbose.' }, base.messages[1]!],
    };
    expect(canonicalInput(otherSystem).key).not.toBe(key);
    const otherUser = { ...base, messages: [base.messages[0]!, { role: 'user' as const, content: 'Read b.txt' }] };
    expect(canonicalInput(otherUser).key).toBe(key);
    const a = canonicalInput(base).tokens;
    const b = canonicalInput(otherUser).tokens;
    let shared = 0;
    while (a[shared] === b[shared]) shared++;
    expect(shared).toBeLessThan(a.length);
  });
});
