// Real servers' context-overflow answers (fixtures/context-overflow/, one file each, with where it was
// seen) replayed over HTTP by the scripted provider, through the real openai client via callModel: each
// must come out CONTEXT_LENGTH_EXCEEDED, and an ordinary 400 must stay BAD_REQUEST.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callModel } from '../../src/providers/call-model.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import { resolveProfile } from '../../src/providers/provider-profiles.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { builtRequest } from '../helpers/built-request.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/context-overflow/', import.meta.url));

const Fixture = z.strictObject({
  server: z.string().min(1),
  version: z.string().min(1),
  /** Where the body was seen: a public issue, pull request or source file. */
  source: z.string().startsWith('https://'),
  /** The date it was seen, or null when the body was built from the server's source, not captured. */
  observed: z.string().min(1).nullable(),
  note: z.string().min(1),
  status: z.number().int().min(200).max(599),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.json(),
  expect: z.strictObject({
    code: z.enum(['CONTEXT_LENGTH_EXCEEDED', 'BAD_REQUEST']),
    messageContains: z.string().min(1),
  }),
});

const fixtures = readdirSync(FIXTURES)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({ name, ...Fixture.parse(JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'))) }));

const servers: ScriptedProvider[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('context overflow as real servers answer it', () => {
  it('has a fixture for every server named in the fixture list, and the list names every fixture', () => {
    const list = readFileSync(join(FIXTURES, 'README.md'), 'utf8');
    for (const fixture of fixtures) expect(list).toContain(`\`${fixture.name}\``);
    expect(fixtures.map((f) => f.name)).toEqual(
      expect.arrayContaining(['llama-server-2026-05.json', 'llama-cpp-python.json', 'openai.json', 'deepseek.json']),
    );
  });

  it.each(fixtures)('$name ($server, $status) → $expect.code', async (fixture) => {
    const server = await startScriptedProvider({
      script: {
        models: ['local-model'],
        cache: 'off',
        replies: [
          {
            fault: {
              kind: 'recorded',
              status: fixture.status,
              headers: fixture.headers ?? {},
              body: fixture.body,
            },
          },
        ],
      },
    });
    servers.push(server);
    const profile = resolveProfile('local', {
      baseURL: server.url,
      models: [{ id: 'local-model', contextWindow: 4096, vision: false, thinking: 'none' }],
    });
    const request = builtRequest({ config: { provider: 'local', model: 'local-model', thinking: undefined } });
    const error = await callModel({ request, profile, apiKey: '', idleTimeoutMs: 5_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(ProviderError);
    const classified = error as ProviderError;
    expect(classified.code).toBe(fixture.expect.code);
    expect(classified.retryable).toBe(false);
    expect(classified.message).toContain(fixture.expect.messageContains);
    expect(server.requests()).toHaveLength(1);
  });
});
