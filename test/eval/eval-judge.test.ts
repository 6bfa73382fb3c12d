// The structural judge's score and reason, and the judge runner: judges run in order, and a judge that
// throws, rejects, hangs or returns nonsense becomes an outcome with score null, never a failed step.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BuiltRequest } from '../../src/core/build-request.js';
import { runJudges, structuralJudge, type EvalJudge, type JudgeInput } from '../../src/eval/eval-judge.js';
import { diffStep, type AnswerFacts } from '../../src/eval/step-diff.js';

const request = {
  sessionId: 's',
  turn: 1,
  step: 1,
  config: { provider: 'p', model: 'm' },
  tools: [],
  messages: [],
} as unknown as BuiltRequest;

function answer(overrides: Partial<AnswerFacts> = {}): AnswerFacts {
  return {
    content: 'the answer is here',
    toolCalls: [],
    finishReason: 'stop',
    usage: null,
    costUsd: null,
    latencyMs: null,
    ...overrides,
  };
}

function input(source: AnswerFacts, candidate: AnswerFacts): JudgeInput {
  return { sessionId: 's', turn: 1, step: 1, request, source, candidate, diff: diffStep(source, candidate) };
}

const call = (name: string, args: string): AnswerFacts['toolCalls'][number] => ({ id: 'c', name, arguments: args });

async function structural(source: AnswerFacts, candidate: AnswerFacts) {
  return structuralJudge.judge(input(source, candidate));
}

describe('structuralJudge', () => {
  it('is named structural and scores an unchanged answer 1', async () => {
    expect(structuralJudge.name).toBe('structural');
    const facts = answer({ toolCalls: [call('read', '{"p":1}')] });
    expect(await structural(facts, facts)).toEqual({ score: 1, reason: 'text, tool calls and finish reason equal' });
  });

  it('weighs tool calls 0.5, text 0.3 and finish reason 0.2', async () => {
    const source = answer({ content: 'abc', toolCalls: [call('a', '{}'), call('b', '{"x":1}')] });
    const candidate = answer({
      content: 'xyz',
      toolCalls: [call('a', '{}'), call('b', '{"x":2}')],
      finishReason: 'tool_calls',
    });
    const verdict = await structural(source, candidate);
    // Half the calls the same, no text in common, finish reason changed.
    expect(verdict.score).toBeCloseTo(0.5 * 0.5 + 0.3 * 0 + 0.2 * 0, 12);
    expect(verdict.reason).toBe(
      'tool call 1 arguments differ at /x; text 0.00 similar; finish reason stop -> tool_calls',
    );
  });

  it('counts no tool calls on either side as all the same', async () => {
    const verdict = await structural(answer({ content: 'the cat sat' }), answer({ content: 'the dog sat' }));
    const diff = diffStep(answer({ content: 'the cat sat' }), answer({ content: 'the dog sat' }));
    expect(verdict.score).toBeCloseTo(0.5 + 0.3 * diff.textSimilarity + 0.2, 12);
    expect(verdict.reason).toBe(`text ${diff.textSimilarity.toFixed(2)} similar`);
  });

  it('names missing, extra and renamed calls, and arguments that differ as a whole', async () => {
    const source = answer({ toolCalls: [call('read', '{"p":1}'), call('grep', 'not json'), call('ls', '{}')] });
    const candidate = answer({ toolCalls: [call('write', '{"p":1}'), call('grep', 'other')] });
    expect((await structural(source, candidate)).reason).toBe(
      'tool call 0 name read -> write; tool call 1 arguments differ as a whole; tool call 2 missing (ls)',
    );
    expect((await structural(answer(), answer({ toolCalls: [call('ls', '{}')] }))).reason).toBe(
      'tool call 0 extra (ls)',
    );
  });

  it('keeps the reason short and on one line however much differs', async () => {
    // Model-made names may hold line breaks.
    const many = (name: string, v: number) =>
      Array.from({ length: 6 }, (_, i) => call(`${name}\n${i}`, JSON.stringify({ a: v, b: v, c: v, d: v })));
    const verdict = await structural(answer({ toolCalls: many('old', 1) }), answer({ toolCalls: many('new', 2) }));
    expect(verdict.reason).not.toMatch(/\n/);
    expect(verdict.reason).toContain('tool call 0 name old 0 -> new 0 arguments differ at /a, /b, /c (+1 more)');
    expect(verdict.reason).toContain('3 more tool call difference(s)');
    expect(verdict.score).toBeCloseTo(0.5, 12);
  });

  it('scores below 1 whenever something differs, and stays in [0, 1]', async () => {
    const verdict = await structural(answer({ content: 'a' }), answer({ content: 'a', finishReason: 'length' }));
    expect(verdict.score).toBeCloseTo(0.8, 12);
    const worst = await structural(
      answer({ content: 'abc', toolCalls: [call('x', '{}')] }),
      answer({ content: null, finishReason: null }),
    );
    expect(worst.score).toBe(0);
  });
});

const judgeInput = input(answer(), answer({ content: 'different' }));

function judgeOf(name: string, judge: EvalJudge['judge']): EvalJudge {
  return { name, judge };
}

describe('runJudges', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs the judges one after another in order and records their verdicts', async () => {
    const log: string[] = [];
    const slow = judgeOf('slow', async () => {
      log.push('slow start');
      await new Promise((resolve) => setTimeout(resolve, 20));
      log.push('slow end');
      return { score: 0.25, reason: 'meh' };
    });
    const fast = judgeOf('fast', () => {
      log.push('fast');
      return { score: 1, reason: 'fine' };
    });
    const outcomes = await runJudges([slow, structuralJudge, fast], judgeInput);
    expect(log).toEqual(['slow start', 'slow end', 'fast']);
    expect(outcomes.map((o) => o.judge)).toEqual(['slow', 'structural', 'fast']);
    expect(outcomes[0]).toEqual({ judge: 'slow', score: 0.25, reason: 'meh' });
    expect(outcomes[2]).toEqual({ judge: 'fast', score: 1, reason: 'fine' });
    expect(outcomes[1]?.score).toBeLessThan(1);
    expect(outcomes.every((o) => !('error' in o))).toBe(true);
  });

  it('hands every judge the input it was given', async () => {
    let seen: JudgeInput | undefined;
    await runJudges(
      [
        judgeOf('peek', (i) => {
          seen = i;
          return { score: 0, reason: '' };
        }),
      ],
      judgeInput,
    );
    expect(seen).toBe(judgeInput);
  });

  it('records a judge that throws or rejects as an error and goes on with the next', async () => {
    const outcomes = await runJudges(
      [
        judgeOf('throws', () => {
          throw new Error('boom');
        }),
        judgeOf('rejects', () => Promise.reject(new Error('async boom'))),
        judgeOf('throws a string', () => {
          throw 'plain'; // eslint-disable-line @typescript-eslint/only-throw-error
        }),
        judgeOf('ok', () => ({ score: 0.5, reason: 'half' })),
      ],
      judgeInput,
    );
    expect(outcomes).toEqual([
      { judge: 'throws', score: null, reason: '', error: 'boom' },
      { judge: 'rejects', score: null, reason: '', error: 'async boom' },
      { judge: 'throws a string', score: null, reason: '', error: 'plain' },
      { judge: 'ok', score: 0.5, reason: 'half' },
    ]);
  });

  it('records a verdict with a bad score or reason as an error', async () => {
    const bad: unknown[] = [
      { score: 1.5, reason: 'too high' },
      { score: -0.1, reason: 'too low' },
      { score: Number.NaN, reason: 'nan' },
      { score: Number.POSITIVE_INFINITY, reason: 'inf' },
      { score: '1', reason: 'string score' },
      { score: 1, reason: 42 },
      { score: 1 },
      null,
      undefined,
      'yes',
    ];
    const outcomes = await runJudges(
      bad.map((verdict, i) => judgeOf(`bad ${i}`, () => verdict as never)),
      judgeInput,
    );
    for (const outcome of outcomes) {
      expect(outcome.score).toBeNull();
      expect(outcome.error).toEqual(expect.any(String));
      expect(outcome.error?.length).toBeGreaterThan(0);
    }
  });

  it('accepts the edges of [0, 1]', async () => {
    const outcomes = await runJudges(
      [judgeOf('zero', () => ({ score: 0, reason: 'none' })), judgeOf('one', () => ({ score: 1, reason: 'all' }))],
      judgeInput,
    );
    expect(outcomes.map((o) => o.score)).toEqual([0, 1]);
  });

  it('cuts reasons and errors to 500 characters', async () => {
    const outcomes = await runJudges(
      [
        judgeOf('long', () => ({ score: 0.5, reason: 'r'.repeat(2000) })),
        judgeOf('long error', () => {
          throw new Error('e'.repeat(2000));
        }),
      ],
      judgeInput,
    );
    expect(outcomes[0]?.reason).toBe('r'.repeat(500));
    expect(outcomes[1]?.error).toBe('e'.repeat(500));
  });

  it('never cuts a reason inside a surrogate pair', async () => {
    const reason = 'x'.repeat(499) + '😀'.repeat(10);
    const [outcome] = await runJudges([judgeOf('emoji', () => ({ score: 1, reason }))], judgeInput);
    expect(outcome?.reason).toBe('x'.repeat(499));
  });

  it('gives up on a judge after the timeout, goes on, and leaves no timer behind', async () => {
    vi.useFakeTimers();
    const hangs = judgeOf('hangs', () => new Promise<never>(() => undefined));
    const ok = judgeOf('ok', () => ({ score: 1, reason: 'fine' }));
    const running = runJudges([hangs, ok], judgeInput, { timeoutMs: 5_000 });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const outcomes = await running;
    expect(outcomes[0]).toMatchObject({ judge: 'hangs', score: null, error: expect.stringContaining('timed out') });
    expect(outcomes[1]).toEqual({ judge: 'ok', score: 1, reason: 'fine' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('defaults the timeout to 60 seconds', async () => {
    vi.useFakeTimers();
    const running = runJudges([judgeOf('hangs', () => new Promise<never>(() => undefined))], judgeInput);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect((await running)[0]?.error).toContain('timed out after 60000 ms');
  });

  it('stays quiet when a judge rejects after its timeout', async () => {
    vi.useFakeTimers();
    let rejectLate: (error: Error) => void = () => undefined;
    const late = judgeOf('late', () => new Promise<never>((_, reject) => (rejectLate = reject)));
    const running = runJudges([late], judgeInput, { timeoutMs: 10 });
    await vi.advanceTimersByTimeAsync(10);
    expect((await running)[0]?.error).toContain('timed out');
    const unhandled: unknown[] = [];
    const listener = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', listener);
    rejectLate(new Error('too late'));
    vi.useRealTimers();
    await new Promise((resolve) => setTimeout(resolve, 10));
    process.off('unhandledRejection', listener);
    expect(unhandled).toEqual([]);
  });

  it('returns no outcomes for no judges and refuses a timeout that is not positive', async () => {
    expect(await runJudges([], judgeInput)).toEqual([]);
    await expect(runJudges([structuralJudge], judgeInput, { timeoutMs: 0 })).rejects.toThrow(RangeError);
  });
});
