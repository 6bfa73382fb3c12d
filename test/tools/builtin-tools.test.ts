import { describe, expect, it } from 'vitest';
import { ToolSchema } from '../../src/core/index.js';
import { createBuiltinTools } from '../../src/tools/builtin-tools.js';

describe('createBuiltinTools', () => {
  const tools = createBuiltinTools({ shell: { sandbox: 'none' } });

  it('returns every built-in tool in a stable order with its flags', () => {
    expect(
      tools.map((tool) => ({
        name: tool.schema.name,
        idempotent: tool.idempotent,
        concurrencySafe: tool.concurrencySafe,
        requiresApproval: tool.requiresApproval,
      })),
    ).toEqual([
      { name: 'read_file', idempotent: true, concurrencySafe: true, requiresApproval: false },
      { name: 'write_file', idempotent: true, concurrencySafe: false, requiresApproval: false },
      { name: 'edit_file', idempotent: false, concurrencySafe: false, requiresApproval: false },
      { name: 'list_dir', idempotent: true, concurrencySafe: true, requiresApproval: false },
      { name: 'glob', idempotent: true, concurrencySafe: true, requiresApproval: false },
      { name: 'grep', idempotent: true, concurrencySafe: true, requiresApproval: false },
      { name: 'shell', idempotent: false, concurrencySafe: false, requiresApproval: true },
    ]);
    expect(createBuiltinTools({ shell: { sandbox: 'none' } }).map((tool) => tool.schema)).toEqual(
      tools.map((tool) => tool.schema),
    );
  });

  it('declares valid JSON Schema parameters without a $schema dialect', () => {
    for (const tool of tools) {
      expect(ToolSchema.parse(tool.schema)).toEqual(tool.schema);
      expect(tool.schema.parameters).not.toHaveProperty('$schema');
      expect(tool.schema.parameters).toMatchObject({ type: 'object', additionalProperties: false });
    }
    expect(tools[3]?.schema.parameters).toMatchObject({ properties: { path: { type: 'string', default: '.' } } });
    expect(tools[3]?.schema.parameters).not.toHaveProperty('required');
    expect(tools[0]?.schema.parameters).toMatchObject({ required: ['path'] });
  });
});
