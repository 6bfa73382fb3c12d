// Rules over src/ that review alone does not keep: no import circle (type-only and lazily loaded imports
// count: a circle is a design knot even when it erases at run time) and no file over 400 lines. A failure
// lists every offender.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');
const MAX_LINES = 400;

/** Every .ts file under src/, relative to it, with forward slashes. */
function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => file.split('\\').join('/'))
    .sort();
}

function lineCount(text: string): number {
  if (text === '') return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}

describe('source rules', () => {
  it('src/ has no import circle, type-only and dynamic imports included', { timeout: 120_000 }, async () => {
    const graph = await madge(SRC, {
      fileExtensions: ['ts'],
      tsConfig: join(ROOT, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: false, skipAsyncImports: false } },
    });
    // The check sees what it claims to: every source file, and every relative import resolved to one
    // (an unresolved import would silently drop its edges, and with them any circle through it).
    expect(Object.keys(graph.obj()).sort(), 'madge saw a different set of files than src/ holds').toEqual(
      sourceFiles(),
    );
    const unresolved = graph.warnings().skipped.filter((specifier) => specifier.startsWith('.'));
    expect(unresolved, `imports madge could not resolve:\n${unresolved.join('\n')}`).toEqual([]);

    const circles = graph.circular().map((circle) => [...circle, circle[0]].join(' -> '));
    expect(circles, `import circles in src/ (break each one):\n${circles.join('\n')}`).toEqual([]);
  });

  it(`no file in src/ is over ${MAX_LINES} lines`, () => {
    const over = sourceFiles()
      .map((file) => ({ file, lines: lineCount(readFileSync(join(SRC, file), 'utf8')) }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `src/${file}: ${lines} lines`);
    expect(over, `files over ${MAX_LINES} lines (split them along their seams):\n${over.join('\n')}`).toEqual([]);
  });
});
