// The example plugin of docs/plugins.md works as documented: its tool counts words inside the workspace,
// refuses paths outside it, and its schema is what the model sees.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPluginRuntime } from '../../src/plugins/plugin-runtime.js';
import { wordCountPlugin, wordCountTool } from '../../examples/plugins/word-count-plugin.js';

describe('example: word-count plugin', () => {
  const workspace = mkdtempSync(join(tmpdir(), 'dh-wc-'));
  writeFileSync(join(workspace, 'doc.txt'), 'one two  three\nfour');
  const context = { sessionId: 's', callId: 'c', workspace, signal: new AbortController().signal };

  it('counts words in a workspace file and refuses an escape', async () => {
    expect(await wordCountTool.run({ path: 'doc.txt' }, context)).toEqual({ status: 'ok', output: '4 words' });
    expect((await wordCountTool.run({ path: '../etc/passwd' }, context)).status).toBe('error');
    expect((await wordCountTool.run({ file: 'doc.txt' }, context)).output).toMatch(/^Bad arguments/);
  });

  it('contributes a system line and its tool schema to the header', async () => {
    const hooks = createPluginRuntime({ plugins: [wordCountPlugin()], seed: { provider: 'p', model: 'm' } });
    const header = await hooks.composeHeader({
      sessionId: 's',
      turn: 1,
      step: 1,
      events: [],
      firstOfInstance: true,
      current: undefined,
    });
    expect(header.system).toBe('Use word_count when asked how long a document is.');
    expect(header.tools?.map((t) => t.name)).toEqual(['word_count']);
    expect(header.tools?.[0]?.parameters).toMatchObject({ type: 'object', required: ['path'] });
  });
});
