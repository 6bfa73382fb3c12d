// grep tries a block of lines in one RE2 call before it tries each line: the lines it reports are exactly the
// lines the pattern matches one by one, whatever the pattern looks at around a line (anchors, word
// boundaries, newlines, flags), and a line over the bound is matched on its first characters.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { re2Problem, re2Search } from '../../src/patterns/re2-match.js';
import { searchLines } from '../../src/tools/search-lines.js';
import { TimeSlice } from '../../src/tools/time-slice.js';

const piece = fc.constantFrom(
  'a',
  'b',
  ' ',
  '.',
  '^',
  '$',
  '\\b',
  '\\B',
  '\\s',
  '\\n',
  '[^a]',
  'a*',
  '(a|b)',
  '(a|$)',
  '(?s).',
  '(?m)',
  '(?-m)',
  '(?i)',
  '(?i-m)',
  '\\A',
  '\\z',
  '\\\\A',
);
const pattern = fc
  .array(piece, { minLength: 1, maxLength: 5 })
  .map((pieces) => pieces.join(''))
  .filter((p) => re2Problem(p, { anywhere: true }) === undefined);
const lines = fc.array(
  fc.array(fc.constantFrom('a', 'b', 'A', ' ', '\r', '.'), { maxLength: 6 }).map((chars) => chars.join('')),
  { minLength: 1, maxLength: 6 },
);

describe('searchLines', () => {
  it('reports the lines that match one by one', async () => {
    await fc.assert(
      fc.asyncProperty(pattern, lines, fc.boolean(), async (p, ls, ignoreCase) => {
        const maxLineChars = 4;
        const expected = ls.flatMap((line, i) => {
          const text = (line.endsWith('\r') ? line.slice(0, -1) : line).slice(0, maxLineChars);
          return re2Search(p, text, { ignoreCase }) ? [i] : [];
        });
        const search = {
          pattern: p,
          ignoreCase,
          maxLineChars,
          slice: new TimeSlice(),
          signal: new AbortController().signal,
        };
        const found = await searchLines(ls, search, ls.length);
        expect(found.matched, `/${p}/ in ${JSON.stringify(ls)}`).toEqual(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('stops at the limit and counts the lines over the bound', async () => {
    const search = {
      pattern: 'x',
      ignoreCase: false,
      maxLineChars: 3,
      slice: new TimeSlice(),
      signal: new AbortController().signal,
    };
    expect(await searchLines(['x', 'aaax', 'x', 'x'], search, 2)).toEqual({ matched: [0, 2], longLines: 1 });
  });
});
