// What the published package lets each entry reach: the scripted provider is a test double, so product code
// does not import it (the audit's prefix-cache model lives in src/providers/), and the entries a product
// imports (`durable-harness`, `/worker`, `/client`) reach neither it, the testing kit, the cluster binaries
// nor the CLI — only `durable-harness/testing` does. Type-only imports count: a type the entry's
// declarations name pulls its module into every consumer's program.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

/**
 * Product code that runs the scripted provider on purpose, with why. Anything else under src/ that imports it
 * fails the first test.
 */
const RUNS_THE_SCRIPTED_PROVIDER: Readonly<Record<string, string>> = {
  'src/cli/commands/scripted-provider.ts': '`dh scripted-provider` serves a script in the foreground',
  'src/cli/operator/run-demo.ts': '`dh demo` is an offline tour on a scripted provider',
};

/** Folders (or files) under src/ that only `durable-harness/testing` may reach. */
const TEST_ONLY = [
  'src/scripted-provider/',
  'src/testing/',
  'src/local-stack/temporal-cluster.ts',
  'src/local-stack/temporal-server-binaries.ts',
  'src/cli/',
];

/** Every .ts file under src/, relative to the root, with forward slashes. */
function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => `src/${file.split('\\').join('/')}`)
    .sort();
}

/** The src/ files `file` imports: static, dynamic and type-only imports and re-exports (NodeNext `.js` → `.ts`). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => match[1] ?? '');
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(ROOT, resolve(dirname(join(ROOT, file)), specifier.replace(/\.js$/, '.ts'))))
    .map((path) => path.split('\\').join('/'));
}

const graph = new Map(sourceFiles().map((file) => [file, importsOf(file)]));

/** One import path from `entry` to each file it reaches (the entry itself: [entry]). */
function pathsFrom(entry: string): Map<string, string[]> {
  const paths = new Map<string, string[]>([[entry, [entry]]]);
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const target of graph.get(file) ?? []) {
      if (paths.has(target)) continue;
      paths.set(target, [...(paths.get(file) ?? []), target]);
      queue.push(target);
    }
  }
  return paths;
}

/** The package's export subpaths with the source file each one's `import` condition is compiled from. */
function packageEntries(): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { import?: string }>;
  };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const file = typeof target === 'string' ? target : target.import;
    const compiled = /^\.\/dist\/(src\/.+)\.js$/.exec(file ?? '');
    if (compiled?.[1] !== undefined) entries.set(subpath, `${compiled[1]}.ts`);
  }
  return entries;
}

describe('package boundaries', () => {
  it('nothing under src/ outside the scripted provider and the testing kit imports the scripted provider', () => {
    const importers = [...graph]
      .filter(([file]) => !file.startsWith('src/scripted-provider/') && !file.startsWith('src/testing/'))
      .filter(([file]) => !Object.hasOwn(RUNS_THE_SCRIPTED_PROVIDER, file))
      .filter(([, targets]) => targets.some((target) => target.startsWith('src/scripted-provider/')))
      .map(([file]) => file);
    expect(
      importers,
      'these import src/scripted-provider (a test double: move what they need to src/providers)',
    ).toEqual([]);
  });

  it('the entries a product imports reach no test-only module; only durable-harness/testing does', () => {
    const entries = packageEntries();
    expect([...entries.keys()].sort()).toEqual(['.', './client', './testing', './worker']);
    const reached: string[] = [];
    for (const [subpath, entry] of entries) {
      expect(graph.has(entry), `${subpath}: ${entry} is not a source file`).toBe(true);
      if (subpath === './testing') continue;
      for (const [file, path] of pathsFrom(entry)) {
        if (TEST_ONLY.some((prefix) => file === prefix || file.startsWith(prefix))) {
          reached.push(`${subpath}: ${path.join(' -> ')}`);
        }
      }
    }
    expect(reached, `entries reaching test-only modules:\n${reached.join('\n')}`).toEqual([]);
    // The check sees the graph: the testing kit reaches the scripted provider.
    const testing = entries.get('./testing');
    expect(
      testing !== undefined && [...pathsFrom(testing).keys()].some((f) => f.startsWith('src/scripted-provider/')),
    ).toBe(true);
  });
});
