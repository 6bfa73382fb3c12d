// Path globs (the `glob` and `grep` tools) on RE2 list the files tinyglobby's picomatch listed: on small globs
// and paths both agree, except where picomatch has quirks the tools never promised (each exclusion says which).
import fc from 'fast-check';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { globToRe2 } from '../../src/patterns/glob-to-re2.js';
import { re2Match, re2Problem } from '../../src/patterns/re2-match.js';

const RUNS = { numRuns: 1000 };

const oneOf = (...values: string[]) => fc.constantFrom(...values);
const joined = (parts: fc.Arbitrary<string[]>) => parts.map((p) => p.join(''));

const simple = fc.oneof(
  { weight: 5, arbitrary: oneOf('a', 'b', '.', '-', '\\*') },
  oneOf('*', '?', '[ab]', '[!a]', '[a-b.]', '**'),
);
const braces = fc
  .array(joined(fc.array(simple, { maxLength: 2 })), { minLength: 2, maxLength: 3 })
  .map((options) => `{${options.join(',')}}`);
const segment = fc.oneof(
  {
    weight: 5,
    arbitrary: joined(fc.array(fc.oneof({ weight: 4, arbitrary: simple }, braces), { minLength: 1, maxLength: 3 })),
  },
  fc.constant('**'),
);
const glob = fc
  .array(segment, { minLength: 1, maxLength: 4 })
  .map((segments) => segments.join('/'))
  .filter(
    (g) =>
      globToRe2(g, { paths: true }).ok &&
      !g.includes('**/**') &&
      // picomatch: `a/**/*` (also as `a/**/{b,*}`) matches "a" itself; ours needs something below "a/" (`a/**`
      // matches "a" in both).
      !/\/\*\*\/[^/]*\*[^/]*$/.test(g) &&
      // picomatch: `*/**` does not match "a" while `?/**` does; ours: `dir/**` matches `dir` always.
      !/\*\/\*\*$/.test(g) &&
      // picomatch reads a leading `**.` as any directories and then "." (`**.b` matches "a/x.b"), though not
      // `**b` or `x/**.b`; ours: a `**` not alone in its segment is always `*`.
      !/^\*\*\./.test(g) &&
      // picomatch drops a leading "./" and reads ".." inside braces as a range.
      !g.startsWith('./') &&
      !g.includes('..') &&
      // picomatch expands braces before it reads segments: an empty option, or a `**` touching a brace,
      // can make an empty segment or a globstar there; ours reads the glob as written.
      !/[{,][,}]/.test(g) &&
      !/\*\*[{},]|[{},]\*\*/.test(g),
  );
/** A file's path below the walked directory: no empty, `.` or `..` segment, as a walk never yields one. */
const path = joined(fc.array(oneOf('a', 'b', '.', '-', '*', '/'), { minLength: 1, maxLength: 8 })).filter(
  (t) => !/(^|\/)\.{0,2}(\/|$)/.test(t),
);

const pathMatches = (g: string, t: string) => {
  const translated = globToRe2(g, { paths: true });
  if (!translated.ok) throw new Error(translated.problem);
  return re2Match(translated.source, t);
};
/** How tinyglobby (as find-files.ts called it) matched: picomatch with dot and posix. */
const picomatchPath = (g: string, t: string) => picomatch(g, { dot: true, posix: true })(t);

describe('path globs on RE2', () => {
  it('match the paths picomatch (dot: true) matched', () => {
    fc.assert(
      fc.property(glob, path, (g, t) => {
        expect(pathMatches(g, t), `${g} against ${t}`).toBe(picomatchPath(g, t));
      }),
      RUNS,
    );
  });

  it('keep `*` and `?` within a segment, and let `**` segments span any number', () => {
    expect(pathMatches('src/*.ts', 'src/a.ts')).toBe(true);
    expect(pathMatches('src/*.ts', 'src/b/a.ts')).toBe(false);
    expect(pathMatches('src/a**.ts', 'src/b/a.ts')).toBe(false);
    expect(pathMatches('*', 'a/b')).toBe(false);
    expect(pathMatches('**', 'a/b')).toBe(true);
    expect(pathMatches('**/*.ts', 'a.ts')).toBe(true);
    expect(pathMatches('src/**/*.ts', 'src/a/b/c.ts')).toBe(true);
    expect(pathMatches('{src,test}/*.ts', 'test/a.ts')).toBe(true);
  });

  it('every path glob it accepts is a pattern RE2 runs', () => {
    const any = fc.string({
      unit: oneOf('a', 'é', '😀', '*', '?', '[', ']', '{', '}', ',', '!', '^', '-', '\\', '/', ':', '(', ')', '|', '.'),
      maxLength: 12,
    });
    fc.assert(
      fc.property(any, (g) => {
        const translated = globToRe2(g, { paths: true });
        if (translated.ok) expect(re2Problem(translated.source), g).toBeUndefined();
      }),
      RUNS,
    );
  });
});
