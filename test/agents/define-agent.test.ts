// defineAgent checks a definition once (a bad field is one line naming it) and versions it by what the model and
// the policy see; loadAgentsModule takes the agents a TypeScript module exports, as `dh worker --agents` does.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, type AgentDefinition } from '../../src/agents/define-agent.js';
import { loadAgentsModule } from '../../src/agents/load-agents-module.js';
import { defineTool } from '../../src/tools/define-tool.js';

const lookup = defineTool({
  name: 'lookup_order',
  description: 'Look up an order.',
  parameters: z.object({ id: z.string() }),
  idempotent: true,
  run: ({ id }) => `order ${id}`,
});
const base: AgentDefinition = { name: 'support', instructions: 'Help.', tools: [lookup] };

describe('defineAgent', () => {
  it('versions a definition by its content: the same twice, another for any change the model or policy sees', () => {
    const version = defineAgent(base).version;
    expect(version).toMatch(/^[0-9a-f]{12}$/);
    expect(defineAgent({ ...base }).version).toBe(version);
    const changed = [
      { ...base, instructions: 'Help briefly.' },
      { ...base, model: 'other' },
      { ...base, temperature: 0.2 },
      { ...base, policy: { ask: ['lookup_order'] } },
      { ...base, revision: '2' },
      {
        ...base,
        tools: [
          defineTool({
            name: 'lookup_order',
            description: 'Find an order.',
            parameters: z.object({ id: z.string() }),
            run: () => '',
          }),
        ],
      },
      { ...base, plugins: [{ name: 'guard' }] },
    ].map((d) => defineAgent(d).version);
    expect(new Set([version, ...changed]).size).toBe(changed.length + 1);
  });

  it('refuses a bad definition with one line naming the field', () => {
    const refusal = (definition: unknown) => {
      try {
        defineAgent(definition as AgentDefinition);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refusal({ ...base, name: 'Support Bot' })).toMatch(/^invalid agent "Support Bot": name: an agent name/);
    expect(refusal({ ...base, instructions: '' })).toMatch(/instructions: the system prompt, not empty/);
    expect(refusal({ ...base, tools: [lookup, lookup] })).toContain('two tools are named "lookup_order"');
    expect(refusal({ ...base, tools: [{ name: 'x' }] })).toMatch(/tools\.0: a tool \(defineTool\)/);
    expect(refusal({ ...base, instruction: 'typo' })).toMatch(/unrecognized key|instruction/i);
    expect(refusal({ ...base, provider: 'openai' })).toContain("an agent runs on its worker's endpoint");
  });
});

describe('loadAgentsModule', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-agents-module-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const defineAgentUrl = new URL('../../src/agents/define-agent.ts', import.meta.url).href;

  it('takes the agents a TypeScript module exports by default, or by name', async () => {
    const file = join(dir, 'agents.ts');
    writeFileSync(
      file,
      `import { defineAgent } from ${JSON.stringify(defineAgentUrl)};\n` +
        `const instructions: string = 'Help.';\n` +
        `export const support = defineAgent({ name: 'support', instructions });\n` +
        `export const triage = defineAgent({ name: 'triage', instructions });\n`,
    );
    expect((await loadAgentsModule(file)).map((a) => a.name)).toEqual(['support', 'triage']);
    writeFileSync(join(dir, 'one.ts'), `${'import'} { support } from './agents.ts';\nexport default [support];\n`);
    expect((await loadAgentsModule(join(dir, 'one.ts'))).map((a) => a.name)).toEqual(['support']);
  });

  it('says what is wrong with a module that is missing, does not load, or exports no agent', async () => {
    await expect(loadAgentsModule(join(dir, 'nope.ts'))).rejects.toThrow(/--agents: no file .*nope\.ts/);
    writeFileSync(join(dir, 'broken.ts'), 'export const = ;\n');
    await expect(loadAgentsModule(join(dir, 'broken.ts'))).rejects.toThrow(/broken\.ts does not load/);
    writeFileSync(join(dir, 'empty.mjs'), 'export const answer = 42;\n');
    await expect(loadAgentsModule(join(dir, 'empty.mjs'))).rejects.toThrow(/exports no agent/);
  });
});
