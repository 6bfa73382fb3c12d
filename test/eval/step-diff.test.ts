// The pure diff of a recorded answer against a re-sent one: text similarity, tool calls matched by
// position and compared as JSON, the number pairs, and the run-level totals.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  diffStep,
  diffToolCalls,
  diffTotals,
  distribution,
  textSimilarity,
  type AnswerFacts,
} from '../../src/eval/step-diff.js';

function answer(overrides: Partial<AnswerFacts> = {}): AnswerFacts {
  return {
    content: 'hello world',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputUncached: 100, cacheRead: 50, output: 20, reasoning: 0 },
    costUsd: 0.01,
    latencyMs: 1000,
    ...overrides,
  };
}

function call(name: string, args: string, id = 'call_x'): AnswerFacts['toolCalls'][number] {
  return { id, name, arguments: args };
}

describe('textSimilarity', () => {
  it('is 1 for equal texts, for both empty and for null against whitespace', () => {
    expect(textSimilarity('same words', 'same words')).toBe(1);
    expect(textSimilarity(null, null)).toBe(1);
    expect(textSimilarity(null, '  \n ')).toBe(1);
    expect(textSimilarity('', '')).toBe(1);
  });

  it('ignores leading, trailing and repeated whitespace', () => {
    expect(textSimilarity('  a  b\n\nc ', 'a b c')).toBe(1);
  });

  it('is 0 against an empty text', () => {
    expect(textSimilarity('something', null)).toBe(0);
    expect(textSimilarity('', 'something')).toBe(0);
  });

  it('counts the characters of the words both texts keep', () => {
    // "the cat sat" vs "the dog sat": "the ", " sat" shared (8 of 11 characters on each side).
    expect(textSimilarity('the cat sat', 'the dog sat')).toBeCloseTo((2 * 8) / 22, 10);
  });

  it('is case-sensitive', () => {
    expect(textSimilarity('Hello', 'hello')).toBeLessThan(1);
  });

  it('stays below 1 for long texts that hold the same words in another order', () => {
    const words = Array.from({ length: 3000 }, (_, i) => `w${i}`);
    const forward = words.join(' ');
    const backward = [...words].reverse().join(' ');
    const score = textSimilarity(forward, backward);
    expect(score).toBeLessThan(1);
    expect(score).toBeGreaterThan(0);
    expect(textSimilarity(backward, forward)).toBe(score);
  });

  const text = fc
    .array(fc.constantFrom('a', 'b', 'cat', 'dog', ' ', '\n', '.', ','), { maxLength: 30 })
    .map((parts) => parts.join(''));
  const normalized = (t: string): string => t.trim().replace(/\s+/g, ' ');

  it('is in [0, 1], symmetric, and 1 exactly when the normalized texts are equal', () => {
    fc.assert(
      fc.property(fc.option(text), fc.option(text), (a, b) => {
        const score = textSimilarity(a, b);
        expect(score).toBeGreaterThanOrEqual(0);
        expect(score).toBeLessThanOrEqual(1);
        expect(textSimilarity(b, a)).toBe(score);
        expect(score === 1).toBe(normalized(a ?? '') === normalized(b ?? ''));
      }),
    );
  });
});

describe('diffToolCalls', () => {
  it('matches calls by position and never compares ids', () => {
    const diffs = diffToolCalls([call('read', '{"path":"a"}', 'call_1')], [call('read', '{"path":"a"}', 'call_2')]);
    expect(diffs).toEqual([
      {
        index: 0,
        source: { name: 'read', arguments: '{"path":"a"}' },
        candidate: { name: 'read', arguments: '{"path":"a"}' },
        verdict: 'same',
        argumentPaths: [],
      },
    ]);
  });

  it('compares arguments as JSON: key order and number spelling do not matter', () => {
    const [diff] = diffToolCalls([call('f', '{"a":1,"b":[1,2]}')], [call('f', ' { "b": [1.0, 2e0], "a": 1 } ')]);
    expect(diff?.verdict).toBe('same');
  });

  it('lists the deepest pointers where arguments differ, keys present on one side included', () => {
    const [diff] = diffToolCalls(
      [call('f', '{"path":["x","y"],"opts":{"deep":{"v":1}},"gone":true}')],
      [call('f', '{"path":["x","z"],"opts":{"deep":{"v":2}},"new":null}')],
    );
    expect(diff?.verdict).toBe('arguments-differ');
    expect(diff?.argumentPaths).toEqual(['/gone', '/new', '/opts/deep/v', '/path/1']);
  });

  it('reports array order and length, and a change of kind at the changed value', () => {
    const [reordered] = diffToolCalls([call('f', '[1,2]')], [call('f', '[2,1]')]);
    expect(reordered?.argumentPaths).toEqual(['/0', '/1']);
    const [longer] = diffToolCalls([call('f', '{"a":[1]}')], [call('f', '{"a":[1,2]}')]);
    expect(longer?.argumentPaths).toEqual(['/a/1']);
    const [kind] = diffToolCalls([call('f', '{"a":[]}')], [call('f', '{"a":{}}')]);
    expect(kind?.argumentPaths).toEqual(['/a']);
    const [root] = diffToolCalls([call('f', '1')], [call('f', '"1"')]);
    expect(root?.argumentPaths).toEqual(['']);
  });

  it('escapes "~" and "/" in pointers (RFC 6901)', () => {
    const [diff] = diffToolCalls([call('f', '{"a/b":{"c~d":1}}')], [call('f', '{"a/b":{"c~d":2}}')]);
    expect(diff?.argumentPaths).toEqual(['/a~1b/c~0d']);
  });

  it('lists at most 20 pointers', () => {
    const many = (v: number): string => JSON.stringify(Array.from({ length: 50 }, () => v));
    const [diff] = diffToolCalls([call('f', many(1))], [call('f', many(2))]);
    expect(diff?.argumentPaths).toHaveLength(20);
    expect(diff?.argumentPaths[0]).toBe('/0');
    expect(diff?.argumentPaths[19]).toBe('/19');
  });

  it('compares raw strings when either side is not valid JSON', () => {
    const [differ] = diffToolCalls([call('f', '{"a":')], [call('f', '{"a":1}')]);
    expect(differ).toMatchObject({ verdict: 'arguments-differ', argumentPaths: [''] });
    const [same] = diffToolCalls([call('f', '{"a":')], [call('f', '{"a":')]);
    expect(same).toMatchObject({ verdict: 'same', argumentPaths: [] });
  });

  it('reports a changed name and still lists the argument pointers', () => {
    const [diff] = diffToolCalls([call('read', '{"p":1}')], [call('write', '{"p":2}')]);
    expect(diff).toMatchObject({ verdict: 'name-differs', argumentPaths: ['/p'] });
  });

  it('reports calls only one side made as missing or extra', () => {
    const one = [call('a', '{}')];
    const two = [call('a', '{}'), call('b', '{}')];
    expect(diffToolCalls(two, one)[1]).toEqual({
      index: 1,
      source: { name: 'b', arguments: '{}' },
      candidate: null,
      verdict: 'missing',
      argumentPaths: [],
    });
    expect(diffToolCalls(one, two)[1]).toEqual({
      index: 1,
      source: null,
      candidate: { name: 'b', arguments: '{}' },
      verdict: 'extra',
      argumentPaths: [],
    });
  });

  it('survives arguments nested deeper than the call stack', () => {
    const deep = (leaf: string): string => '['.repeat(50_000) + leaf + ']'.repeat(50_000);
    const [diff] = diffToolCalls([call('f', deep('1'))], [call('f', deep('2'))]);
    expect(diff?.argumentPaths).toEqual(['/0'.repeat(50_000)]);
  });

  const toolCalls = fc.array(
    fc.record({ id: fc.string(), name: fc.constantFrom('a', 'b'), arguments: fc.oneof(fc.json(), fc.string()) }),
    { maxLength: 5 },
  );

  it('finds a list the same as itself, whatever the ids', () => {
    fc.assert(
      fc.property(toolCalls, (calls) => {
        const renamed = calls.map((c, i) => ({ ...c, id: `other_${i}` }));
        expect(diffToolCalls(calls, renamed).every((d) => d.verdict === 'same' && d.argumentPaths.length === 0)).toBe(
          true,
        );
      }),
    );
  });

  it('gives one entry per position of the longer list, with pointers exactly when not the same', () => {
    fc.assert(
      fc.property(toolCalls, toolCalls, (a, b) => {
        const diffs = diffToolCalls(a, b);
        expect(diffs.map((d) => d.index)).toEqual(Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i));
        for (const d of diffs) {
          if (d.verdict === 'same') expect(d.argumentPaths).toEqual([]);
          if (d.verdict === 'arguments-differ') expect(d.argumentPaths.length).toBeGreaterThan(0);
          expect(d.argumentPaths.length).toBeLessThanOrEqual(20);
        }
      }),
    );
  });
});

describe('diffStep', () => {
  it('finds an answer equal to itself in every respect, with zero deltas', () => {
    const facts = answer({ toolCalls: [call('read', '{"p":"x"}')], finishReason: 'tool_calls' });
    const diff = diffStep(facts, facts);
    expect(diff).toMatchObject({
      textSimilarity: 1,
      textEqual: true,
      toolCallsEqual: true,
      finishReason: { source: 'tool_calls', candidate: 'tool_calls', equal: true },
      inputTokens: { source: 150, candidate: 150, delta: 0 },
      cachedTokens: { source: 50, candidate: 50, delta: 0 },
      outputTokens: { source: 20, candidate: 20, delta: 0 },
      costUsd: { source: 0.01, candidate: 0.01, delta: 0 },
      latencyMs: { source: 1000, candidate: 1000, delta: 0 },
    });
  });

  it('reports what changed, deltas as candidate minus source', () => {
    const diff = diffStep(
      answer(),
      answer({
        content: 'goodbye world',
        toolCalls: [call('read', '{}')],
        finishReason: 'tool_calls',
        usage: { inputUncached: 10, cacheRead: 140, output: 35, reasoning: 7 },
        costUsd: 0.004,
        latencyMs: 400,
      }),
    );
    expect(diff.textEqual).toBe(false);
    expect(diff.textSimilarity).toBeGreaterThan(0);
    expect(diff.textSimilarity).toBeLessThan(1);
    expect(diff.toolCallsEqual).toBe(false);
    expect(diff.toolCalls[0]?.verdict).toBe('extra');
    expect(diff.finishReason).toEqual({ source: 'stop', candidate: 'tool_calls', equal: false });
    expect(diff.inputTokens).toEqual({ source: 150, candidate: 150, delta: 0 });
    expect(diff.cachedTokens).toEqual({ source: 50, candidate: 140, delta: 90 });
    expect(diff.outputTokens).toEqual({ source: 20, candidate: 35, delta: 15 });
    expect(diff.costUsd.delta).toBeCloseTo(-0.006, 12);
    expect(diff.latencyMs).toEqual({ source: 1000, candidate: 400, delta: -600 });
  });

  it('leaves a delta null when a side has no value', () => {
    const diff = diffStep(answer(), answer({ usage: null, costUsd: null, latencyMs: null, finishReason: null }));
    expect(diff.inputTokens).toEqual({ source: 150, candidate: null, delta: null });
    expect(diff.cachedTokens).toEqual({ source: 50, candidate: null, delta: null });
    expect(diff.outputTokens).toEqual({ source: 20, candidate: null, delta: null });
    expect(diff.costUsd).toEqual({ source: 0.01, candidate: null, delta: null });
    expect(diff.latencyMs).toEqual({ source: 1000, candidate: null, delta: null });
    expect(diff.finishReason).toEqual({ source: 'stop', candidate: null, equal: false });
  });

  it('counts whitespace-only changes as equal text', () => {
    expect(diffStep(answer({ content: 'hello   world\n' }), answer()).textEqual).toBe(true);
  });
});

describe('distribution', () => {
  it('is count 0 and nulls for no values', () => {
    expect(distribution([])).toEqual({ count: 0, min: null, p50: null, p90: null, max: null, mean: null });
  });

  it('uses nearest-rank percentiles over the sorted values', () => {
    const values = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
    expect(distribution(values)).toEqual({ count: 10, min: 1, p50: 5, p90: 9, max: 10, mean: 5.5 });
    expect(distribution([42])).toEqual({ count: 1, min: 42, p50: 42, p90: 42, max: 42, mean: 42 });
    expect(distribution([3, 1, 2])).toMatchObject({ p50: 2, p90: 3 });
  });

  it('does not reorder its input', () => {
    const values = [3, 1, 2];
    distribution(values);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('diffTotals', () => {
  it('counts equal steps, sums costs and tokens with nulls as 0, and spreads latency over steps that have one', () => {
    const equal = diffStep(answer(), answer());
    const changed = diffStep(
      answer({ latencyMs: null }),
      answer({ content: 'other', finishReason: 'length', costUsd: null, usage: null, latencyMs: 3000 }),
    );
    const totals = diffTotals([equal, changed]);
    expect(totals).toMatchObject({
      steps: 2,
      textEqual: 1,
      toolCallsEqual: 2,
      finishReasonEqual: 1,
      outputTokens: { source: 40, candidate: 20 },
      cachedTokens: { source: 100, candidate: 50 },
    });
    expect(totals.costUsd.source).toBeCloseTo(0.02, 12);
    expect(totals.costUsd.candidate).toBeCloseTo(0.01, 12);
    expect(totals.textSimilarity).toMatchObject({ count: 2, max: 1, min: changed.textSimilarity });
    expect(totals.latencyMs.source).toMatchObject({ count: 1, min: 1000, max: 1000 });
    expect(totals.latencyMs.candidate).toMatchObject({ count: 2, min: 1000, max: 3000, mean: 2000 });
  });

  it('is all zeros and empty distributions for no steps', () => {
    const totals = diffTotals([]);
    expect(totals.steps).toBe(0);
    expect(totals.costUsd).toEqual({ source: 0, candidate: 0 });
    expect(totals.textSimilarity.count).toBe(0);
    expect(totals.latencyMs.source.mean).toBeNull();
  });
});
