// The scripted provider: a real OpenAI-compatible HTTP server on loopback (node:http) that records
// every request byte-exact before judging it (and then how it answered), rejects what real providers reject,
// and answers valid requests with the script's replies, faults and simulated prefix-cache usage, within an
// optional per-API-key rate quota (rate-quota.ts). Bodies over its bound are refused with 413 before they are
// read (Hono's bodyLimit in front of the node:http handler).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer, type HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { apiError, type ApiError } from './api-error.js';
import { buildUsage } from './build-usage.js';
import {
  canonicalInput,
  canonicalOutput,
  completionTokenCounts,
  type CanonicalInput,
} from '../providers/canonical-tokens.js';
import type { ModelList, Usage } from './chat-completion-response.js';
import { pause, playReply, sendError, sendJson, sendRecorded } from './play-reply.js';
import { PrefixCache, type CacheLookup } from '../providers/prefix-cache.js';
import { recordHeaders } from './record-headers.js';
import { CREATED_EPOCH_SECONDS, replyTurn, responseMeta } from './render-reply.js';
import { apiKeyOf, quotaTokenCost, RateQuota, resolveQuota, type QuotaOptions } from './rate-quota.js';
import { ReplyQueue } from './reply-queue.js';
import { RequestLog, type RecordedRequest } from './request-log.js';
import { loadScript, parseScript, type CacheMode, type Fault, type Script } from './script.js';
import { scriptExhausted } from './script-exhausted.js';
import { statusFault } from './status-fault.js';
import { StreamHolds } from './stream-holds.js';
import { validateRequest } from './validate-request.js';

export type { RecordedAnswer, RecordedRequest } from './request-log.js';

export interface ScriptedProviderStats {
  /** Requests received (every path). */
  readonly requests: number;
  /** Chat-completion requests rejected by validation. */
  readonly rejected: number;
  /** Valid requests that found the script exhausted (answered 500). */
  readonly exhausted: number;
  readonly repliesUsed: number;
  readonly repliesRemaining: number;
  /** Requests answered again as an equal earlier one was (`retries: same-reply`). */
  readonly repeatedRequests: number;
  /** Chat-completion requests refused with a 429 by the rate quota (0 without a quota). */
  readonly rateLimited: number;
}

export interface ScriptedProvider {
  /** Base URL including `/v1`, e.g. `http://127.0.0.1:41234/v1`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in arrival order, each with its answer once that started. */
  requests(): readonly RecordedRequest[];
  stats(): ScriptedProviderStats;
  /**
   * Wall-clock milliseconds (Date.now) of each 429 the rate quota sent, in order: all of them, or only
   * those of one API key (the `Authorization: Bearer` token; null = requests without the header).
   */
  rateLimitedAt(apiKey?: string | null): readonly number[];
  /** Lets the streams held at `key` (a reply's `hold`) go on, now and later. */
  release(key: string): void;
  close(): Promise<void>;
}

export interface StartScriptedProviderOptions {
  /** The script itself, or the path of a `.json` / `.yaml` script file. */
  script: Script | string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** JSONL file that gets one RecordedRequest per line (with its answer), appended as answers start. */
  recordFile?: string;
  /** Overrides the script's `cache`. */
  cache?: CacheMode;
  /**
   * A per-API-key rate quota on chat completions (see docs/scripted-provider.md, "Rate-limit quotas").
   * Each field set here overrides the same field of the script's `quota`.
   */
  quota?: QuotaOptions;
  /** Largest request body in bytes (default DEFAULT_PROVIDER_MAX_BODY_BYTES); a larger one is 413. */
  maxBodyBytes?: number;
}

/** Far above any request a model's context window makes (a million tokens is a few MB of JSON). */
export const DEFAULT_PROVIDER_MAX_BODY_BYTES = 64 * 1024 * 1024;

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

export async function startScriptedProvider(options: StartScriptedProviderOptions): Promise<ScriptedProvider> {
  const script =
    typeof options.script === 'string' ? loadScript(options.script) : parseScript(options.script, '<inline script>');
  const cacheMode = options.cache ?? script.cache;
  const cache = cacheMode === 'off' ? undefined : new PrefixCache(cacheMode);
  const queue = new ReplyQueue(script);
  const quotaConfig = resolveQuota(script.quota, options.quota);
  const quota = quotaConfig === undefined ? undefined : new RateQuota(quotaConfig);
  const recorded = new RequestLog(options.recordFile);
  const lifetime = new AbortController();
  const holds = new StreamHolds();
  let rejected = 0;

  /** Set once the request is recorded: the handler's error path completes its record too. */
  interface Handling {
    index?: number;
  }

  async function handle(req: IncomingMessage, res: ServerResponse, bytes: Buffer, handling: Handling): Promise<void> {
    const index = recorded.received({
      path: req.url ?? '',
      method: req.method ?? '',
      headers: Object.freeze(recordHeaders(req.headers)),
      body: bytes.toString('utf8'),
      receivedAt: Date.now(),
    });
    handling.index = index;

    const requestId = `req-scripted-${index}`;
    /** An error answer, recorded with its status, code (and the fault that made it) before it is sent. */
    const fail = (error: ApiError, fault?: Fault['kind']): void => {
      recorded.answered(index, {
        status: error.status,
        ...(fault !== undefined ? { fault } : {}),
        ...(error.body.error.code !== null ? { error: error.body.error.code } : {}),
      });
      sendError(res, error, requestId);
    };
    const pathname = new URL(req.url ?? '/', 'http://scripted.invalid').pathname.replace(/\/+$/, '');
    if (pathname === '/v1/models' || pathname === '/models') {
      if (req.method !== 'GET') return fail(apiError(405, 'Method not allowed.', { code: 'method_not_allowed' }));
      const list: ModelList = {
        object: 'list',
        data: script.models.map((id) => ({
          id,
          object: 'model',
          created: CREATED_EPOCH_SECONDS,
          owned_by: 'scripted-provider',
          ...(script.contextWindows?.[id] !== undefined ? { max_model_len: script.contextWindows[id] } : {}),
        })),
      };
      recorded.answered(index, { status: 200 });
      return sendJson(res, 200, list, { 'x-request-id': requestId });
    }
    if (pathname !== '/v1/chat/completions' && pathname !== '/chat/completions') {
      return fail(apiError(404, `Unknown request URL: ${req.method ?? ''} ${req.url ?? ''}.`, { code: 'unknown_url' }));
    }
    if (req.method !== 'POST') {
      return fail(apiError(405, 'Method not allowed: use POST.', { code: 'method_not_allowed' }));
    }

    const verdict = validateRequest(bytes, { models: script.models, reasoningPassBack: script.reasoningPassBack });
    if (!verdict.ok) {
      rejected++;
      return fail(verdict.error);
    }
    const request = verdict.request;
    // Admission comes before a reply is taken: a refused request leaves the script as it was.
    let input: CanonicalInput | undefined;
    if (quota !== undefined) {
      input = canonicalInput(request);
      const next = queue.peek(request);
      const replyTokens = next === undefined ? 0 : completionTokenCounts(replyTurn(next.reply)).completion;
      const cost = quotaTokenCost(request, input.tokens.length, replyTokens);
      const admission = quota.admit(apiKeyOf(req.headers.authorization), cost, request.model);
      if (!admission.ok) return fail(admission.error);
      // Set on the response now, so every answer below carries them (writeHead merges them in).
      for (const [name, value] of Object.entries(admission.headers)) res.setHeader(name, value);
    }
    const selection = queue.next(request);
    if (selection.kind === 'exhausted') return fail(scriptExhausted(script, request, index, selection.exhaustedCount));
    const reply = selection.reply;
    const stream = request.stream === true;
    const meta = responseMeta(index, request.model, stream && request.stream_options?.include_usage === true);
    const failure = statusFault(reply.fault);
    const replayed = reply.fault?.kind === 'recorded' ? reply.fault : undefined;

    // Cache and usage are settled now, in arrival order, whatever the delays: the simulation stays
    // deterministic. Status faults and recorded answers never reach the model, so they leave the cache
    // alone; other faults persist the input, and only a complete output persists the output unit.
    let usage: Usage | undefined;
    if (failure === undefined && replayed === undefined) {
      const turn = replyTurn(reply);
      input ??= canonicalInput(request);
      const lookup: CacheLookup = cache
        ? cache.process(input, reply.fault === undefined ? canonicalOutput(turn) : undefined)
        : { promptTokens: input.tokens.length, hitTokens: 0, missTokens: input.tokens.length };
      usage = buildUsage(cacheMode, lookup, completionTokenCounts(turn), reply.usage);
    }

    const signal = AbortSignal.any([lifetime.signal, closeSignal(res)]);
    await pause(reply.delayMs, signal);
    const fault = reply.fault?.kind;
    if (failure !== undefined) return fail(failure, fault);
    if (replayed !== undefined) {
      recorded.answered(index, { status: replayed.status, fault: 'recorded' });
      return sendRecorded(res, replayed, requestId);
    }
    // Every reply and 200-level fault starts with a 200, but a non-streamed disconnect, which sends nothing.
    const status = fault === 'disconnect' && !stream ? null : 200;
    recorded.answered(index, { status, ...(fault !== undefined ? { fault } : {}) });
    await playReply(res, reply, meta, usage ?? zeroUsage, stream, signal, requestId, holds);
  }

  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_PROVIDER_MAX_BODY_BYTES;
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => {
        const error = apiError(413, `Request body too large: the limit is ${maxBodyBytes} bytes.`, {
          code: 'request_too_large',
        });
        return c.json(error.body, 413);
      },
    }),
  );
  app.all('*', async (c) => {
    const bytes = Buffer.from(await c.req.arrayBuffer());
    await answer(c.env.incoming, c.env.outgoing, bytes);
    return RESPONSE_ALREADY_SENT;
  });
  // The globals stay Node's own: the worker in the same process (tests, the demo) fetches with them.
  const server = createAdaptorServer({ fetch: app.fetch, overrideGlobalObjects: false });

  async function answer(req: IncomingMessage, res: ServerResponse, bytes: Buffer): Promise<void> {
    const handling: Handling = {};
    await handle(req, res, bytes, handling).catch((error: unknown) => {
      // A request recorded and not answered yet: the connection ends without a status, or with the 500 below.
      const unanswered = (status: number | null, code?: string) => {
        if (handling.index !== undefined)
          recorded.answered(handling.index, { status, ...(code !== undefined ? { error: code } : {}) });
      };
      if (isAbort(error) || res.destroyed) {
        unanswered(null);
        res.destroy();
        return;
      }
      if (!res.headersSent) {
        const detail = error instanceof Error ? error.message : String(error);
        unanswered(500, 'internal_error');
        sendJson(
          res,
          500,
          apiError(500, `scripted provider internal error: ${detail}`, { code: 'internal_error' }).body,
        );
      } else {
        res.destroy();
      }
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    requests: () => recorded.all(),
    stats: () => {
      const queueStats = queue.stats();
      return {
        requests: recorded.size,
        rejected,
        exhausted: queueStats.exhausted,
        repliesUsed: queueStats.used,
        repliesRemaining: queueStats.remaining,
        repeatedRequests: queueStats.repeatedRequests,
        rateLimited: quota?.refused ?? 0,
      };
    },
    rateLimitedAt: (apiKey) => quota?.refusedAt(apiKey) ?? [],
    release: (key) => holds.release(key),
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        lifetime.abort();
        server.close((error) => (error ? reject(error) : resolve()));
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
      return closing;
    },
  };
}

const zeroUsage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** Aborts when the response closes (finished, or the client went away). */
function closeSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}
