// The committed JSON Schemas of the session workflow's signal and update payloads equal a fresh
// generation from the zod schemas (`npm run schemas` regenerates them).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { messageSchemaFiles, SCHEMAS_DIR } from '../../scripts/export-schemas.js';

describe('schemas/*.json', () => {
  it('match a fresh generation from the zod schemas (run `npm run schemas` after changing a payload)', async () => {
    const fresh = await messageSchemaFiles();
    expect(
      readdirSync(SCHEMAS_DIR)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    ).toEqual([...fresh.keys()].sort());
    for (const [file, text] of fresh) expect(readFileSync(join(SCHEMAS_DIR, file), 'utf8'), file).toBe(text);
  });

  it('describe what the workflow accepts', async () => {
    const send = JSON.parse((await messageSchemaFiles()).get('send.update.json') ?? '{}') as {
      required: string[];
      additionalProperties: boolean;
      properties: Record<string, unknown>;
    };
    expect(send.required.sort()).toEqual(['content', 'target', 'wakeup']);
    expect(send.additionalProperties).toBe(false);
    expect(send.properties.target).toEqual({ type: 'string', enum: ['next-turn', 'next-step'] });
  });
});
