// Property tests of the `inside` path predicate on a real directory tree with symlinks that stay, leave
// and dangle: it never holds for a path whose real location is outside the directory (whatever `..`,
// `.`, absolute prefixes or links it takes), and it holds for every plain path under the directory.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep, isAbsolute } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { decideCall } from '../../src/policy/decide-call.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { gatherPathFacts } from '../../src/policy/policy-paths.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'dh-path-prop-')));
const ws = join(root, 'ws');
for (const dir of ['src/a', 'docs', 'lib']) mkdirSync(join(ws, dir), { recursive: true });
mkdirSync(join(root, 'outside'));
symlinkSync('../docs', join(ws, 'src', 'up')); // inside the workspace, outside src
symlinkSync(join(root, 'outside'), join(ws, 'src', 'out')); // outside the workspace
symlinkSync('../src', join(ws, 'docs', 'back')); // into src from elsewhere
symlinkSync(join(ws, 'nowhere'), join(ws, 'src', 'dangling')); // to nothing
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SEGMENTS = [
  'src',
  'a',
  'docs',
  'lib',
  'up',
  'out',
  'back',
  'dangling',
  'new',
  'x.ts',
  '..',
  '.',
  'outside',
  'ws',
];
const LINKS = new Set(['up', 'out', 'back', 'dangling']);
const rules = parsePolicy(
  JSON.stringify({
    rules: [{ id: 'in-src', tool: 'write', when: [{ arg: '/path', inside: 'src' }], outcome: 'allow' }],
  }),
  'policy.json',
).rules;

async function holds(path: string): Promise<boolean> {
  const facts = await gatherPathFacts(rules, 'write', { path }, ws);
  return decideCall(rules, [], { name: 'write', args: { path } }, facts).outcome === 'allow';
}

/** Where a path lands on disk: the deepest existing ancestor's real path, then the components below it. */
function realLocation(absolute: string): string {
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return join(realpathSync(current), ...rest.reverse());
    } catch {
      if (dirname(current) === current) return absolute;
      rest.push(basename(current));
      current = dirname(current);
    }
  }
}

const within = (dir: string, path: string) => {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
};

const anyPath = fc.tuple(
  fc.constantFrom('', `${ws}/`, '/', `${root}/`),
  fc.array(fc.constantFrom(...SEGMENTS), { minLength: 0, maxLength: 6 }),
);

describe('the inside predicate', () => {
  it('never holds for a path that lands outside the directory', async () => {
    await fc.assert(
      fc.asyncProperty(anyPath, async ([prefix, segments]) => {
        const path = prefix + segments.join('/');
        if (!(await holds(path))) return;
        const landing = realLocation(resolve(ws, path));
        expect(within(join(ws, 'src'), landing), `${path} → ${landing}`).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('holds for every plain relative path under the directory, and the same path made absolute', async () => {
    const plain = fc.array(fc.constantFrom(...SEGMENTS.filter((s) => !LINKS.has(s) && s !== '..' && s !== '.')), {
      maxLength: 5,
    });
    await fc.assert(
      fc.asyncProperty(plain, fc.boolean(), async (segments, absolute) => {
        const rel = ['src', ...segments].join('/');
        expect(await holds(absolute ? `${ws}/${rel}` : rel), rel).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('never holds once `..` climbs out of the workspace, whatever follows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 4 }), async (tail) => {
        expect(await holds(['..', 'ws', 'src', ...tail].join('/'))).toBe(false);
        expect(await holds(['src', '..', '..', 'ws', 'src', ...tail].join('/'))).toBe(false);
      }),
      { numRuns: 150 },
    );
  });
});
