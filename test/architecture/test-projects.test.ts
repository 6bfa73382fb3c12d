// The vitest projects of test/projects.ts split the suite: every test file is in exactly one (a new file in no
// project would never run), every entry names a file, a unit file provisions nothing (no inject(), no test
// setup, no process, database or Temporal client in what it imports), and no file injects what its project lacks.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { globSync } from 'tinyglobby';
import { describe, expect, it } from 'vitest';
import { TEST_PROJECT_NAMES, TEST_PROJECTS, type TestProjectName } from '../projects.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Files as vitest's include finds them (it globs with tinyglobby too), relative to the root. */
const glob = (patterns: readonly string[]): string[] =>
  globSync([...patterns], { cwd: ROOT, ignore: ['**/node_modules/**', '**/.git/**'], expandDirectories: false }).sort();

const members = new Map(TEST_PROJECT_NAMES.map((name) => [name, glob(TEST_PROJECTS[name].files)]));

/** Packages a unit file must not load: they start processes or talk to a database or a Temporal server. */
const NOT_UNIT = [
  'node:child_process',
  'child_process',
  'better-sqlite3',
  'pg',
  '@temporalio/client',
  '@temporalio/worker',
];

interface Imports {
  /** Every file of test/ the file loads at run time, itself included, relative to the root. */
  readonly files: string[];
  /** Every bare specifier those files import at run time. */
  readonly packages: Set<string>;
  /** The keys they inject(). */
  readonly injected: Set<string>;
}

/** What `file` loads at run time within test/ (type-only imports erase, so they do not count). */
function importsOf(file: string): Imports {
  const files: string[] = [];
  const packages = new Set<string>();
  const injected = new Set<string>();
  const pending = [file];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (files.includes(next)) continue;
    files.push(next);
    const text = readFileSync(join(ROOT, next), 'utf8');
    const specifiers = [
      ...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?'([^']+)'/gm),
      ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
    ].map((match) => match[1] ?? '');
    for (const specifier of specifiers) {
      if (!specifier.startsWith('.')) {
        packages.add(specifier);
        continue;
      }
      const target = relative(ROOT, resolve(dirname(join(ROOT, next)), specifier.replace(/\.js$/, '.ts')));
      if (target.startsWith('test/') && existsSync(join(ROOT, target))) pending.push(target);
    }
    if (/^\s*import\s*\{[^}]*\binject\b[^}]*\}\s*from\s*'vitest'/m.test(text)) {
      for (const match of text.matchAll(/\binject\(\s*'(\w+)'\s*\)/g)) injected.add(match[1] ?? '');
    }
  }
  return { files, packages, injected };
}

describe('the test projects', () => {
  it('hold every test file exactly once', () => {
    const projectsOf = new Map<string, TestProjectName[]>(glob(['test/**/*.test.ts']).map((file) => [file, []]));
    for (const [name, files] of members) for (const file of files) projectsOf.get(file)?.push(name);
    const wrong = [...projectsOf]
      .filter(([, names]) => names.length !== 1)
      .map(([file, names]) => `${file}: ${names.length === 0 ? 'in no project' : `in ${names.join(' and ')}`}`);
    expect(wrong, `each test file belongs to one project of test/projects.ts:\n${wrong.join('\n')}`).toEqual([]);
  });

  it('name only files that exist', () => {
    const stale = TEST_PROJECT_NAMES.flatMap((name) =>
      TEST_PROJECTS[name].files.filter((pattern) => glob([pattern]).length === 0).map((p) => `${name}: ${p}`),
    );
    expect(stale, `entries of test/projects.ts that match no file:\n${stale.join('\n')}`).toEqual([]);
  });

  it('keep unit files free of anything that needs provisioning or a process', () => {
    const problems = (members.get('unit') ?? []).flatMap((file) => {
      const { files, packages, injected } = importsOf(file);
      return [
        ...[...injected].map((key) => `${file} injects ${key}`),
        ...files.filter((loaded) => loaded.startsWith('test/setup/')).map((setup) => `${file} loads ${setup}`),
        ...NOT_UNIT.filter((name) => packages.has(name)).map((name) => `${file} loads ${name}`),
      ];
    });
    expect(problems, `move these files to stack or system in test/projects.ts:\n${problems.join('\n')}`).toEqual([]);
  });

  it('inject only what their project provides', () => {
    const problems = TEST_PROJECT_NAMES.flatMap((name) =>
      (members.get(name) ?? []).flatMap((file) =>
        [...importsOf(file).injected]
          .filter((key) => !(TEST_PROJECTS[name].provides as readonly string[]).includes(key))
          .map((key) => `${file} (${name}) injects ${key}, which the ${name} setup does not provide`),
      ),
    );
    expect(problems, problems.join('\n')).toEqual([]);
  });
});
