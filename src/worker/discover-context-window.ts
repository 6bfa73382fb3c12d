// Asks a generic OpenAI-compatible endpoint, once, when a worker starts, which models it serves (`GET /v1/models`,
// with each one's window where the server says) and its model's context window: llama.cpp (data[].meta.n_ctx,
// else `GET /props` → default_generation_settings.n_ctx), vLLM (data[].max_model_len), Ollama (`POST /api/show`
// → `num_ctx` in its parameters, else model_info["<arch>.context_length"]). Bounded in time; a failure is a
// reason to log, never an error.
import { z } from 'zod';
import type { ServedModel } from '../config/worker-profile.js';

/** A window worth believing: DH_CONTEXT_WINDOW's bounds. */
const TokenCount = z.number().int().min(256).max(100_000_000);

/** `GET /v1/models`: llama.cpp puts its runtime context in `meta.n_ctx` (n_ctx_train is the model's, not the server's); vLLM reports `max_model_len`. */
export const ModelsAnswer = z.object({
  data: z.array(
    z.object({
      id: z.string(),
      max_model_len: z.unknown().optional(),
      meta: z.object({ n_ctx: z.unknown().optional() }).nullish(),
    }),
  ),
});
export type ModelsAnswer = z.infer<typeof ModelsAnswer>;

/** llama.cpp's `GET /props`: the slots' context size. */
export const PropsAnswer = z.object({
  default_generation_settings: z.object({ n_ctx: z.unknown().optional() }),
});
export type PropsAnswer = z.infer<typeof PropsAnswer>;

/** Ollama's `POST /api/show`: `parameters` is Modelfile text (`num_ctx 8192` per line), model_info the GGUF keys. */
export const ShowAnswer = z.object({
  parameters: z.string().optional(),
  model_info: z.record(z.string(), z.unknown()).optional(),
});
export type ShowAnswer = z.infer<typeof ShowAnswer>;

export type WindowDiscovery =
  { readonly tokens: number; readonly source: string } | { readonly tokens: undefined; readonly reason: string };

/** The endpoint's model list, or why there is none (no such route, an error, no answer in time). */
export type ServedModels =
  | { readonly models: readonly ServedModel[]; readonly source: string }
  | { readonly models: undefined; readonly reason: string };

export interface EndpointDiscovery {
  readonly served: ServedModels;
  /** The configured model's window; null when it was not asked for (DH_CONTEXT_WINDOW says it). */
  readonly window: WindowDiscovery | null;
}

export interface DiscoverContextWindowOptions {
  /** The endpoint's OpenAI-compatible base URL (DH_BASE_URL), e.g. `http://127.0.0.1:8080/v1`. */
  readonly baseURL: string;
  readonly model: string;
  /** Sent as a bearer token, as the chat calls send it (servers started with an API key ask for it). */
  readonly apiKey?: string;
  /** The budget of all probes together; default 3 s. */
  readonly timeoutMs?: number;
}

export interface DiscoverEndpointOptions extends DiscoverContextWindowOptions {
  /** Whether to look for the configured model's window too (default true); the model list is always asked. */
  readonly askWindow?: boolean;
}

export const DISCOVERY_TIMEOUT_MS = 3_000;

type Probe = (get: Getter) => Promise<{ tokens: number; source: string } | string>;
type Getter = (url: string, body?: unknown) => Promise<{ ok: true; json: unknown } | { ok: false; why: string }>;

/** Tries the probes in order and returns the first window a server reports, or why none did. */
export async function discoverContextWindow(options: DiscoverContextWindowOptions): Promise<WindowDiscovery> {
  const { window } = await discoverEndpoint(options);
  return window ?? { tokens: undefined, reason: 'not asked' };
}

/** The endpoint's model list (one `GET /models`) and, unless `askWindow` is false, its model's window. */
export async function discoverEndpoint(options: DiscoverEndpointOptions): Promise<EndpointDiscovery> {
  const base = options.baseURL.replace(/\/+$/, '');
  // /props and /api/show live at the server's root, which is the base URL without its OpenAI `/v1`.
  const root = base.replace(/\/v1$/, '');
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DISCOVERY_TIMEOUT_MS);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey !== undefined && options.apiKey !== '') headers.authorization = `Bearer ${options.apiKey}`;
  const get: Getter = async (url, body) => {
    try {
      const response = await fetch(url, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // The key goes to the configured server only, never to wherever it redirects.
        redirect: 'error',
        signal: deadline,
      });
      if (!response.ok) {
        await response.body?.cancel();
        return { ok: false, why: `HTTP ${response.status}` };
      }
      return { ok: true, json: await response.json() };
    } catch (error) {
      if (deadline.aborted)
        return { ok: false, why: `no answer within ${options.timeoutMs ?? DISCOVERY_TIMEOUT_MS} ms` };
      // fetch says only "fetch failed"; the cause says what (ECONNREFUSED, a redirect, ...).
      const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
      return { ok: false, why: `${error instanceof Error ? error.message : String(error)}${cause}` };
    }
  };
  const modelsProbe = `GET ${base}/models`;
  const list = await listModels(get, `${base}/models`);
  const served: ServedModels =
    typeof list === 'string'
      ? { models: undefined, reason: `${modelsProbe}: ${list}` }
      : { models: list.map(servedModel), source: modelsProbe };
  if (options.askWindow === false) return { served, window: null };
  const probes: Array<[string, Probe]> = [
    [modelsProbe, () => Promise.resolve(typeof list === 'string' ? list : fromModels(list, options.model))],
    [`GET ${root}/props`, (g) => fromProps(g, `${root}/props`)],
    [`POST ${root}/api/show`, (g) => fromShow(g, `${root}/api/show`, options.model)],
  ];
  const reasons: string[] = [];
  for (const [name, probe] of probes) {
    if (deadline.aborted && name !== modelsProbe) {
      reasons.push(`${name}: not tried (out of time)`);
      continue;
    }
    const found = await probe(get);
    if (typeof found !== 'string')
      return { served, window: { tokens: found.tokens, source: `${name} ${found.source}` } };
    reasons.push(`${name}: ${found}`);
  }
  return { served, window: { tokens: undefined, reason: reasons.join('; ') } };
}

/** The entries of `GET /models`, or why there are none. */
async function listModels(get: Getter, url: string): Promise<ModelsAnswer['data'] | string> {
  const answer = await get(url);
  if (!answer.ok) return answer.why;
  const parsed = ModelsAnswer.safeParse(answer.json);
  return parsed.success ? parsed.data.data : 'not a model list';
}

/** A listed model with the window its entry reports (llama.cpp's runtime n_ctx, vLLM's max_model_len), if any. */
function servedModel(entry: ModelsAnswer['data'][number]): ServedModel {
  const tokens = entryWindow(entry);
  return tokens === undefined ? { id: entry.id } : { id: entry.id, contextWindow: tokens.tokens };
}

function entryWindow(entry: ModelsAnswer['data'][number]): { tokens: number; field: string } | undefined {
  const nCtx = TokenCount.safeParse(entry.meta?.n_ctx);
  if (nCtx.success) return { tokens: nCtx.data, field: 'meta.n_ctx' };
  const maxLen = TokenCount.safeParse(entry.max_model_len);
  if (maxLen.success) return { tokens: maxLen.data, field: 'max_model_len' };
  return undefined;
}

function fromModels(entries: ModelsAnswer['data'], model: string): { tokens: number; source: string } | string {
  // llama.cpp lists its one model under the file path or alias, whatever the request names.
  const entry = entries.find((e) => e.id === model) ?? (entries.length === 1 ? entries[0] : undefined);
  if (entry === undefined) return `no entry for "${model}" among ${entries.length}`;
  const window = entryWindow(entry);
  if (window !== undefined) return { tokens: window.tokens, source: `data[id=${entry.id}].${window.field}` };
  return `no meta.n_ctx or max_model_len for "${entry.id}"`;
}

async function fromProps(get: Getter, url: string): Promise<{ tokens: number; source: string } | string> {
  const answer = await get(url);
  if (!answer.ok) return answer.why;
  const parsed = PropsAnswer.safeParse(answer.json);
  const nCtx = TokenCount.safeParse(parsed.data?.default_generation_settings.n_ctx);
  return nCtx.success ? { tokens: nCtx.data, source: 'default_generation_settings.n_ctx' } : 'no n_ctx';
}

async function fromShow(get: Getter, url: string, model: string): Promise<{ tokens: number; source: string } | string> {
  const answer = await get(url, { model });
  if (!answer.ok) return answer.why;
  const parsed = ShowAnswer.safeParse(answer.json);
  if (!parsed.success) return 'not a model description';
  // num_ctx is what the server runs the model with; context_length only what the model was trained for.
  const numCtx = /^\s*num_ctx\s+(\d+)\s*$/m.exec(parsed.data.parameters ?? '')?.[1];
  const configured = TokenCount.safeParse(numCtx === undefined ? undefined : Number(numCtx));
  if (configured.success) return { tokens: configured.data, source: 'parameters num_ctx' };
  const info = parsed.data.model_info ?? {};
  const arch = info['general.architecture'];
  const key = `${typeof arch === 'string' ? arch : '?'}.context_length`;
  const trained = TokenCount.safeParse(info[key]);
  if (trained.success) {
    return { tokens: trained.data, source: `model_info["${key}"] (the trained maximum: Ollama may run less)` };
  }
  return 'no num_ctx or context_length';
}
