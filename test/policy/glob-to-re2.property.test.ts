// The glob → RE2 translation keeps the verdicts the policy gave when picomatch matched its globs: on small
// globs and texts (where picomatch is fast) both agree, except where picomatch has quirks docs/policy.md
// never promised (each exclusion below says which). Every glob the translation accepts is one RE2 runs.
import fc from 'fast-check';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { toolNameMatches } from '../../src/mcp/mcp-tool-name.js';
import { globToRe2 } from '../../src/patterns/glob-to-re2.js';
import { globMatches } from '../../src/policy/policy-patterns.js';
import { re2Problem } from '../../src/patterns/re2-match.js';
import { toolPatternMatches } from '../../src/policy/tool-pattern.js';

const RUNS = { numRuns: 1000 };

/** A `.` or `..` path segment: picomatch's `*` refuses to run across one (sometimes), ours does not. */
const DOT_SEGMENT = /(^|\/)\.{1,2}(\/|$)/;
/** `**` as a whole segment: picomatch's readings of it vary with what is around it (see the globstar property). */
const GLOBSTAR = /(^|[/{,])\*\*+([/},]|$)/;

const oneOf = (...values: string[]) => fc.constantFrom(...values);
const joined = (parts: fc.Arbitrary<string[]>) => parts.map((p) => p.join(''));

const literal = oneOf('a', 'b', 'c', '.', '-', '/', '\\*', '\\?', '\\[', '\\{');
const set = fc
  .tuple(
    fc.boolean(),
    fc.array(oneOf('a', 'b', 'c', '.', '/', '-', 'a-c', 'b-c', '.-/'), { minLength: 1, maxLength: 3 }),
  )
  .map(([negated, items]) => `[${negated ? '^' : ''}${items.join('')}]`);
const simple = fc.oneof({ weight: 4, arbitrary: literal }, oneOf('*', '**', '?'), set);
const braces = fc
  .array(joined(fc.array(simple, { maxLength: 3 })), { minLength: 2, maxLength: 3 })
  .map((options) => `{${options.join(',')}}`);
const glob = joined(
  fc.array(fc.oneof({ weight: 6, arbitrary: simple }, braces), { minLength: 1, maxLength: 5 }),
).filter(
  (g) =>
    globToRe2(g).ok &&
    !DOT_SEGMENT.test(g) &&
    // picomatch drops a leading "./" and reads ".." inside braces as a range.
    !g.startsWith('./') &&
    !g.includes('..') &&
    !GLOBSTAR.test(g),
);
/** picomatch never matches "", and lets a glob ending in a set match a trailing "/" too. */
const text = joined(fc.array(oneOf('a', 'b', 'c', '.', '-', '/'), { minLength: 1, maxLength: 8 })).filter(
  (t) => !DOT_SEGMENT.test(t) && !t.endsWith('/'),
);

const picomatchArgument = (g: string, t: string) => picomatch(g, { bash: true, dot: true })(t);

describe('glob → RE2', () => {
  it('argument globs match as picomatch (bash: true, dot: true) matched them', () => {
    fc.assert(
      fc.property(glob, text, (g, t) => {
        expect(globMatches(g, t), `${g} against ${t}`).toBe(picomatchArgument(g, t));
      }),
      RUNS,
    );
  });

  it('`**` segments match as picomatch matched them', () => {
    const part = joined(
      fc.array(fc.oneof({ weight: 4, arbitrary: oneOf('a', 'b', '.') }, oneOf('?', '[ab]', '*')), {
        minLength: 1,
        maxLength: 3,
      }),
    );
    const segmented = fc
      .array(fc.oneof(part, fc.constant('**')), { minLength: 1, maxLength: 4 })
      .map((segments) => segments.join('/'))
      .filter(
        (g) =>
          !DOT_SEGMENT.test(g) &&
          !g.includes('**/**') &&
          // picomatch: `a/**/*` matches "a" (its `/**/` may end the text); ours needs the "a/".
          !/\/\*\*\/\*+(\/|$)/.test(g) &&
          // picomatch: `*/**` does not match "a" while `?/**` does; ours: `dir/**` matches `dir` always.
          !/\*\/\*\*$/.test(g),
      );
    const path = joined(fc.array(oneOf('a', 'b', '.', '/'), { minLength: 1, maxLength: 8 })).filter(
      (t) => !DOT_SEGMENT.test(t) && !t.startsWith('/') && !t.endsWith('/') && !t.includes('//'),
    );
    fc.assert(
      fc.property(segmented, path, (g, t) => {
        expect(globMatches(g, t), `${g} against ${t}`).toBe(picomatchArgument(g, t));
      }),
      RUNS,
    );
  });

  it('tool patterns name the tools the picomatch-based matcher named', () => {
    const toolPattern = joined(
      fc.array(
        fc.oneof({ weight: 4, arbitrary: oneOf('a', 'b', '_', '-', 'mcp__') }, oneOf('*', '?', '[ab]', '{a,b_}')),
        {
          minLength: 1,
          maxLength: 5,
        },
      ),
    );
    const toolName = joined(fc.array(oneOf('a', 'b', '_', '-', 'mcp__'), { minLength: 1, maxLength: 6 }));
    // What tool-pattern.ts did before it ran on RE2.
    const before = (pattern: string, name: string) =>
      pattern === '*' ||
      toolNameMatches(pattern, name) ||
      (picomatch.scan(pattern).isGlob && picomatch(pattern, { dot: true })(name));
    fc.assert(
      fc.property(toolPattern, toolName, (pattern, name) => {
        expect(toolPatternMatches(pattern, name), `${pattern} naming ${name}`).toBe(before(pattern, name));
      }),
      RUNS,
    );
  });

  it('every glob it accepts is a pattern RE2 runs', () => {
    const any = fc.string({
      unit: oneOf('a', 'é', '😀', '*', '?', '[', ']', '{', '}', ',', '!', '^', '-', '\\', '/', ':', '(', ')', '|', '.'),
      maxLength: 12,
    });
    fc.assert(
      fc.property(any, (g) => {
        const translated = globToRe2(g);
        if (translated.ok) expect(re2Problem(translated.source), g).toBeUndefined();
      }),
      RUNS,
    );
  });
});
