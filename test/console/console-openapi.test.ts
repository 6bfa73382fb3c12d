// The console's OpenAPI document: valid OpenAPI 3.1 by an independent validator, one path per route of
// CONSOLE_ROUTES, every answer with its real schema, the body limit and the parameters' exact forms stated, and
// message-payload schemas equal to what `npm run schemas` writes to schemas/*.json. (That the server answers as
// the document says is console-schemathesis.test.ts's.)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { CONSOLE_MAX_BODY_BYTES } from '../../src/console/console-body-limit.js';
import { MESSAGE_PAYLOAD_SCHEMAS, openApiDocument } from '../../src/console/openapi-document.js';
import { ROUTE_METHODS, type ConsoleRoute } from '../../src/console/route-methods.js';
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

  const operationOf = (route: ConsoleRoute): Json =>
    ((document.paths as Json)[CONSOLE_ROUTES[route].replace(/:([a-zA-Z]+)/g, '{$1}')] as Json)[
      ROUTE_METHODS[route].toLowerCase()
    ] as Json;
  const routes = Object.keys(CONSOLE_ROUTES) as ConsoleRoute[];
  const schemas = (document.components as { schemas: Record<string, Json> }).schemas;
  const parameter = (route: ConsoleRoute, name: string): Json =>
    ((operationOf(route).parameters as Json[]).find((p) => p.name === name)?.schema ?? {}) as Json;

  it('describes every route with its method', () => {
    const paths = Object.keys(document.paths as Json);
    const expected = Object.values(CONSOLE_ROUTES).map((r) => r.replace(/:([a-zA-Z]+)/g, '{$1}'));
    expect([...new Set(paths)].sort()).toEqual([...new Set(expected)].sort());
    for (const route of routes) expect(operationOf(route), route).toBeDefined();
    expect(routes.filter((r) => ROUTE_METHODS[r] === 'POST').sort()).toEqual(
      ['approve', 'compact', 'fork', 'interrupt', 'messages'].sort(),
    );
  });

  it('gives every success its schema, generated from the zod schema the server answers with', () => {
    for (const route of routes) {
      const [status, response] = Object.entries(operationOf(route).responses as Json).find(([s]) => s < '300') ?? [];
      expect(status, route).toBeDefined();
      const content = (response as { content: Record<string, { schema: Json }> }).content;
      const [media, { schema }] = Object.entries(content)[0] ?? ['', { schema: {} }];
      // The live stream's schema is one event's; every JSON answer names a component with its fields.
      const described = media === 'text/event-stream' ? schema : schemas[String(schema.$ref).split('/').pop() ?? ''];
      expect(described, `${route}: ${JSON.stringify(schema)}`).toMatchObject({ type: 'object' });
      expect(Object.keys((described as { properties?: Json }).properties ?? {}).length, route).toBeGreaterThan(0);
    }
    // Nothing refers into a `$defs` of its own: such a reference would point at the document's root.
    expect(JSON.stringify(document)).not.toContain('"#/$defs/');
  });

  it('states the body limit, and every parameter as the server reads it', () => {
    expect((document.info as Json).description).toContain(`${CONSOLE_MAX_BODY_BYTES} bytes`);
    for (const route of routes.filter((r) => ROUTE_METHODS[r] === 'POST')) {
      const body = operationOf(route).requestBody as Json;
      expect(body.description, route).toContain(`${CONSOLE_MAX_BODY_BYTES} bytes`);
      expect((operationOf(route).responses as Json)['413'], route).toBeDefined();
    }
    const pattern = (schema: Json) => new RegExp(String(schema.pattern));
    expect(pattern(parameter('evalRun', 'runId')).test('run-1')).toBe(true);
    expect(pattern(parameter('evalRun', 'runId')).test('a run')).toBe(false);
    for (const name of ['from', 'Last-Event-ID']) {
      expect(pattern(parameter('live', name)).test('12:34'), name).toBe(true);
      expect(pattern(parameter('live', name)).test(''), name).toBe(false);
    }
    expect(pattern(parameter('sessions', 'since')).test('2024-02-29T10:00:00Z')).toBe(true);
    expect(pattern(parameter('sessions', 'since')).test('yesterday')).toBe(false);
    for (const [route, name] of [
      ['events', 'from'],
      ['request', 'turn'],
      ['request', 'step'],
    ] as const) {
      expect(parameter(route, name), `${route} ${name}`).toMatchObject({
        type: 'integer',
        maximum: Number.MAX_SAFE_INTEGER,
      });
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
