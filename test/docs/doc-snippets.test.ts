// The TypeScript of docs/building-agents.md is a user's code: each block imports only what a project with the
// package installed has (its entries, zod, the Temporal client, the example's own agents). The blocks are
// compiled against the packed package, beside examples/support-agent, by test/package/packed-example.test.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fencedBlocks } from './markdown-scan.js';

const GUIDE = fileURLToPath(new URL('../../docs/building-agents.md', import.meta.url));
const IMPORTABLE = [
  'durable-harness',
  'durable-harness/worker',
  'durable-harness/client',
  'durable-harness/testing',
  'zod',
  '@temporalio/client',
  './agents.js',
];

describe('the TypeScript blocks of a doc', () => {
  it('are read with the line each starts on', () => {
    const markdown = ['# T', '', '```ts', 'const a = 1;', '```', '', '```sh', 'ls', '```', '```ts', 'b;', '```'].join(
      '\n',
    );
    expect(fencedBlocks(markdown, ['ts'])).toEqual([
      { line: 4, lang: 'ts', text: 'const a = 1;\n' },
      { line: 11, lang: 'ts', text: 'b;\n' },
    ]);
  });

  it('of docs/building-agents.md import only what a project with the package has', () => {
    const blocks = fencedBlocks(readFileSync(GUIDE, 'utf8'), ['ts']);
    expect(blocks.length).toBeGreaterThan(3);
    const strays = blocks.flatMap((block) =>
      [...block.text.matchAll(/\bfrom\s+'([^']+)'/g)]
        .map((match) => match[1] ?? '')
        .filter((specifier) => !IMPORTABLE.includes(specifier))
        .map((specifier) => `docs/building-agents.md:${block.line}: ${specifier}`),
    );
    expect(strays).toEqual([]);
  });
});
