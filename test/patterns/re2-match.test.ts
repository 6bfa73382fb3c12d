// The RE2 engine the policy and the search tools share: whole-text and anywhere matching, case folding,
// patterns RE2 cannot run, and an engine that survives running out of its fixed WASM heap.
import { describe, expect, it } from 'vitest';
import { PatternUndecidableError, re2Match, re2Problem, re2Search } from '../../src/patterns/re2-match.js';

const CATASTROPHIC = `${'a'.repeat(48)}b`;

describe('re2Match (the whole text) and re2Search (anywhere in it)', () => {
  it('a nested quantifier against 48 "a"s and a "b" answers', () => {
    expect(re2Match('(a+)+$', CATASTROPHIC)).toBe(false);
    expect(re2Search('(a+)+$', CATASTROPHIC)).toBe(false);
    expect(re2Search('(a+)+b$', CATASTROPHIC)).toBe(true);
  });

  it('anchors only the whole-text mode', () => {
    expect(re2Match('b', 'abc')).toBe(false);
    expect(re2Search('b', 'abc')).toBe(true);
    expect(re2Search('^b', 'abc')).toBe(false);
    expect(re2Search('c$', 'abc')).toBe(true);
  });

  it('folds case only when asked, and keeps the modes apart in its cache', () => {
    expect(re2Search('todo', 'a TODO here')).toBe(false);
    expect(re2Search('todo', 'a TODO here', { ignoreCase: true })).toBe(true);
    expect(re2Search('todo', 'a TODO here')).toBe(false);
    expect(re2Match('todo', 'todo')).toBe(true);
  });

  it('refuses a text over its bound rather than match part of it', () => {
    expect(() => re2Search('a', 'xxxa', { maxLength: 3 })).toThrow(PatternUndecidableError);
    expect(re2Search('a', 'xxa', { maxLength: 3 })).toBe(true);
  });

  it('says why RE2 cannot run a pattern, in either mode', () => {
    expect(re2Problem('a(?=b)', { anywhere: true })).toBe('invalid perl operator: (?=');
    expect(re2Problem('(a)\\1', { anywhere: true, ignoreCase: true })).toBe('invalid escape sequence: \\1');
    expect(re2Problem('a(?=b)')).toBe('invalid perl operator: (?=');
    expect(() => re2Search('a(?=b)', 'ab')).toThrow(/RE2 cannot run the pattern \(invalid perl operator: \(\?=\)/);
    expect(re2Problem('a|b', { anywhere: true })).toBeUndefined();
  });
});

describe('the engine', () => {
  it('survives running out of its memory, and matches again', () => {
    // A text past the WASM heap (16 MiB) makes re2-wasm abort: the match cannot say; the next one can.
    const huge = 'a'.repeat(12_000_000);
    expect(() => re2Match('a*', huge, huge.length)).toThrow(PatternUndecidableError);
    expect(re2Match('(a+)+$', CATASTROPHIC)).toBe(false);
    expect(re2Match('a*b', CATASTROPHIC)).toBe(true);
  });

  // re2-match.ts frees compiled patterns through re2-wasm's embind handle (`wrapper.delete`), which is not
  // public API: if an upgrade moves it, patterns leak until the heap runs out. Fail here first.
  it('relies on a compiled RE2 exposing its embind handle with delete()', async () => {
    const { RE2 } = await import('re2-wasm');
    const re = new RE2('a+', 'u') as unknown as { wrapper?: { delete?: unknown } };
    expect(typeof re.wrapper?.delete).toBe('function');
  });
});
