// The console's OpenAPI document: valid OpenAPI 3.1 by an independent validator, one path per route of
// CONSOLE_ROUTES, and message-payload schemas equal to what `npm run schemas` writes to schemas/*.json.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { MESSAGE_PAYLOAD_SCHEMAS, openApiDocument } from '../../src/console/openapi-document.js';
import { messageSchemaFiles, SCHEMAS_DIR } from '../../scripts/export-schemas.js';

type Json = Record<string, unknown>;

describe('the console OpenAPI document', () => {
  const document = openApiDocument();

  it('is a valid OpenAPI 3.1 document', async () => {
    const copy = JSON.parse(JSON.stringify(document)) as Parameters<typeof SwaggerParser.validate>[0];
    await expect(SwaggerParser.validate(copy)).resolves.toBeDefined();
    expect(document.openapi).toBe('3.1.0');
  });

  it('the validator rejects a broken document (the check above can fail)', async () => {
    const broken = JSON.parse(JSON.stringify(document)) as Json;
    (broken.paths as Json)['/api/sessions'] = { get: { responses: 'none' } };
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow();
  });

  it('describes every route with its methods', () => {
    const paths = Object.keys(document.paths as Json);
    const expected = Object.values(CONSOLE_ROUTES).map((r) => r.replace(/:([a-zA-Z]+)/g, '{$1}'));
    expect(paths.sort()).toEqual([...expected].sort());
    const post = ['messages', 'interrupt', 'approve', 'compact', 'fork'] as const;
    for (const name of post) {
      const item = (document.paths as Json)[CONSOLE_ROUTES[name].replace(/:([a-zA-Z]+)/g, '{$1}')] as Json;
      expect(item.post, name).toBeDefined();
    }
  });

  it('carries the message payload schemas exactly as schemas/*.json has them', async () => {
    const schemas = (document.components as { schemas: Json }).schemas;
    const files = await messageSchemaFiles();
    expect(
      Object.keys(MESSAGE_PAYLOAD_SCHEMAS)
        .map((n) => `${n}.json`)
        .sort(),
    ).toEqual([...files.keys()].sort());
    for (const [file, generated] of files) {
      const name = file.replace(/\.json$/, '');
      const strip = (text: string): Json => {
        const { $schema: _s, title: _t, description: _d, ...rest } = JSON.parse(text) as Json;
        return rest;
      };
      const committed = strip(readFileSync(join(SCHEMAS_DIR, file), 'utf8'));
      expect(schemas[name], name).toEqual(committed);
      expect(schemas[name], name).toEqual(strip(generated));
    }
  });
});
