// Context-window discovery against small HTTP servers that answer as llama.cpp, vLLM and Ollama do (the
// response shapes of their model endpoints), and against servers that say nothing, fail or never answer:
// a window when one is reported, otherwise a reason naming every probe, within the time budget.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverContextWindow, discoverEndpoint } from '../../src/worker/discover-context-window.js';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: string;
}

type Route = (req: IncomingMessage, body: string) => { status: number; json?: unknown } | 'hang';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server answering each `METHOD /path` from `routes` (404 otherwise); returns its `/v1` base URL. */
async function serve(routes: Record<string, Route>): Promise<{ baseURL: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      seen.push({ method: req.method ?? '', path, authorization: req.headers.authorization, body });
      const route = routes[`${req.method ?? ''} ${path}`];
      const answer = route ? route(req, body) : { status: 404, json: { error: 'not found' } };
      if (answer === 'hang') return; // headers never come
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.json ?? {}));
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}/v1`, seen };
}

/** llama.cpp's `GET /v1/models`: its one model under the alias (or file path), meta from the loaded model. */
const llamaModels = (meta: Record<string, unknown>) => ({
  object: 'list',
  models: [{ name: 'qwen.gguf', model: 'qwen.gguf', type: 'model', capabilities: ['completion'] }],
  data: [{ id: 'qwen.gguf', object: 'model', created: 1_700_000_000, owned_by: 'llamacpp', meta }],
});

describe('context window discovery', () => {
  it('llama.cpp: meta.n_ctx of its one model, whatever the configured id, asked with the key', async () => {
    const { baseURL, seen } = await serve({
      'GET /v1/models': () => ({ status: 200, json: llamaModels({ n_ctx: 8192, n_ctx_train: 131072, n_embd: 2048 }) }),
    });
    const found = await discoverContextWindow({ baseURL, model: 'local', apiKey: 'sk-local' });
    expect(found).toEqual({ tokens: 8192, source: `GET ${baseURL}/models data[id=qwen.gguf].meta.n_ctx` });
    expect(seen).toEqual([{ method: 'GET', path: '/v1/models', authorization: 'Bearer sk-local', body: '' }]);
  });

  it("llama.cpp without n_ctx in its model list (n_ctx_train is the model's, not the server's): GET /props", async () => {
    const { baseURL, seen } = await serve({
      'GET /v1/models': () => ({ status: 200, json: llamaModels({ n_ctx_train: 131072, n_vocab: 151936 }) }),
      'GET /props': () => ({ status: 200, json: { default_generation_settings: { n_ctx: 32768 }, total_slots: 1 } }),
    });
    const found = await discoverContextWindow({ baseURL, model: 'local' });
    expect(found).toEqual({
      tokens: 32768,
      source: `GET ${baseURL.slice(0, -3)}/props default_generation_settings.n_ctx`,
    });
    expect(seen.map((s) => `${s.method} ${s.path} ${s.authorization ?? '-'}`)).toEqual([
      'GET /v1/models -',
      'GET /props -',
    ]);
  });

  it('vLLM: max_model_len of the configured model among several', async () => {
    const { baseURL } = await serve({
      'GET /v1/models': () => ({
        status: 200,
        json: {
          object: 'list',
          data: [
            { id: 'other', object: 'model', owned_by: 'vllm', root: 'other', max_model_len: 4096, permission: [] },
            { id: 'Qwen/Qwen3-8B', object: 'model', owned_by: 'vllm', root: 'x', max_model_len: 40960, permission: [] },
          ],
        },
      }),
    });
    const found = await discoverContextWindow({ baseURL, model: 'Qwen/Qwen3-8B' });
    expect(found).toMatchObject({ tokens: 40960, source: expect.stringContaining('max_model_len') as string });
  });

  it("Ollama: num_ctx from the model's parameters first, else <arch>.context_length", async () => {
    const show = (parameters: string) => () => ({
      status: 200,
      json: {
        parameters,
        details: { family: 'llama', parameter_size: '8.0B' },
        model_info: { 'general.architecture': 'llama', 'llama.context_length': 131072, 'llama.block_count': 32 },
      },
    });
    const ollamaModels = () => ({
      status: 200,
      json: { object: 'list', data: [{ id: 'llama3.1:8b', object: 'model' }] },
    });
    const withNumCtx = await serve({
      'GET /v1/models': ollamaModels,
      'POST /api/show': show('temperature 0.7\nnum_ctx                        16384\nstop "<|eot_id|>"'),
    });
    expect(await discoverContextWindow({ baseURL: withNumCtx.baseURL, model: 'llama3.1:8b' })).toMatchObject({
      tokens: 16384,
      source: expect.stringContaining('parameters num_ctx') as string,
    });
    expect(withNumCtx.seen.at(-1)).toMatchObject({
      method: 'POST',
      path: '/api/show',
      body: '{"model":"llama3.1:8b"}',
    });
    const trainedOnly = await serve({ 'GET /v1/models': ollamaModels, 'POST /api/show': show('temperature 0.7') });
    expect(await discoverContextWindow({ baseURL: trainedOnly.baseURL, model: 'llama3.1:8b' })).toMatchObject({
      tokens: 131072,
      source: expect.stringContaining('model_info["llama.context_length"]') as string,
    });
  });

  it('a server that reports no window: the reason names each probe and what it got', async () => {
    const { baseURL } = await serve({
      'GET /v1/models': () => ({ status: 200, json: { object: 'list', data: [{ id: 'm', object: 'model' }] } }),
      'GET /props': () => ({ status: 500, json: { error: 'boom' } }),
    });
    const found = await discoverContextWindow({ baseURL, model: 'm' });
    expect(found.tokens).toBeUndefined();
    const reason = 'reason' in found ? found.reason : '';
    expect(reason).toContain(`GET ${baseURL}/models: no meta.n_ctx or max_model_len for "m"`);
    expect(reason).toContain('/props: HTTP 500');
    expect(reason).toContain('/api/show: HTTP 404');
  });

  it('implausible numbers are not believed', async () => {
    const { baseURL } = await serve({
      'GET /v1/models': () => ({ status: 200, json: llamaModels({ n_ctx: -1 }) }),
      'GET /props': () => ({ status: 200, json: { default_generation_settings: { n_ctx: '8192' } } }),
    });
    expect((await discoverContextWindow({ baseURL, model: 'm' })).tokens).toBeUndefined();
  });

  it('a server that never answers: the budget ends the discovery, and the reason says so', async () => {
    const { baseURL } = await serve({ 'GET /v1/models': () => 'hang' });
    const found = await discoverContextWindow({ baseURL, model: 'm', timeoutMs: 300 });
    expect('reason' in found ? found.reason : '').toMatch(/no answer within 300 ms.*not tried \(out of time\)/);
  });

  it('nothing listening: the connection error is the reason', async () => {
    const { baseURL } = await serve({});
    const port = new URL(baseURL).port;
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
    const found = await discoverContextWindow({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'm' });
    expect(found.tokens).toBeUndefined();
    expect('reason' in found ? found.reason : '').toMatch(
      /GET http:\/\/127\.0\.0\.1:\d+\/v1\/models: fetch failed \(.*ECONNREFUSED/,
    );
  });
});

describe('the models an endpoint serves', () => {
  const vllmModels = () => ({
    status: 200,
    json: {
      object: 'list',
      data: [
        { id: 'Qwen/Qwen3-8B', object: 'model', owned_by: 'vllm', max_model_len: 40960 },
        { id: 'Qwen/Qwen3-0.6B', object: 'model', owned_by: 'vllm' },
      ],
    },
  });

  it('are listed with the window each entry reports, from the same GET as the window', async () => {
    const { baseURL, seen } = await serve({ 'GET /v1/models': vllmModels });
    const found = await discoverEndpoint({ baseURL, model: 'Qwen/Qwen3-8B' });
    expect(found).toEqual({
      served: {
        models: [{ id: 'Qwen/Qwen3-8B', contextWindow: 40960 }, { id: 'Qwen/Qwen3-0.6B' }],
        source: `GET ${baseURL}/models`,
      },
      window: { tokens: 40960, source: `GET ${baseURL}/models data[id=Qwen/Qwen3-8B].max_model_len` },
    });
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /v1/models']);
  });

  it('with the window configured, only the list is asked', async () => {
    const { baseURL, seen } = await serve({ 'GET /v1/models': vllmModels });
    const found = await discoverEndpoint({ baseURL, model: 'elsewhere', askWindow: false });
    expect(found.window).toBeNull();
    expect(found.served.models?.map((m) => m.id)).toEqual(['Qwen/Qwen3-8B', 'Qwen/Qwen3-0.6B']);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /v1/models']);
  });

  it('an endpoint without a model list: the reason says why, and the window probes still run', async () => {
    const { baseURL } = await serve({
      'GET /props': () => ({ status: 200, json: { default_generation_settings: { n_ctx: 4096 } } }),
    });
    const found = await discoverEndpoint({ baseURL, model: 'm' });
    expect(found.served).toEqual({ models: undefined, reason: `GET ${baseURL}/models: HTTP 404` });
    expect(found.window?.tokens).toBe(4096);
    const { baseURL: odd } = await serve({ 'GET /v1/models': () => ({ status: 200, json: { models: [] } }) });
    expect((await discoverEndpoint({ baseURL: odd, model: 'm', askWindow: false })).served).toEqual({
      models: undefined,
      reason: `GET ${odd}/models: not a model list`,
    });
  });
});
