// The script a scripted provider plays back: which models exist, which cache rules apply, and the
// replies (or faults) it answers with. Loaded from JSON or YAML with errors that name the file and the
// JSON path of the first problem.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { DhError } from '../core/errors.js';

export const ScriptErrorCode = {
  Invalid: 'SCRIPT_INVALID',
  Unreadable: 'SCRIPT_UNREADABLE',
} as const;

/** A script that cannot be read or does not satisfy the schema. `details.path` is the JSON path. */
export class ScriptError extends DhError {}

export const ScriptToolCall = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  /** The raw argument string; an object is accepted for convenience and serialized with JSON.stringify. */
  arguments: z.union([z.string(), z.record(z.string(), z.json()).transform((value) => JSON.stringify(value))]),
});
export type ScriptToolCall = z.output<typeof ScriptToolCall>;

const count = z.number().int().nonnegative();

/** Overrides merged over the computed usage (wire field names). */
export const UsageOverride = z.strictObject({
  prompt_tokens: count.optional(),
  completion_tokens: count.optional(),
  total_tokens: count.optional(),
  prompt_cache_hit_tokens: count.optional(),
  prompt_cache_miss_tokens: count.optional(),
  prompt_tokens_details: z.strictObject({ cached_tokens: count.optional() }).optional(),
  completion_tokens_details: z.strictObject({ reasoning_tokens: count.optional() }).optional(),
});
export type UsageOverride = z.output<typeof UsageOverride>;

export const Fault = z.discriminatedUnion('kind', [
  /** 429 with `retry-after` (whole seconds, rounded up) and `retry-after-ms` headers. */
  z.strictObject({
    kind: z.literal('rate-limit'),
    retryAfterSeconds: z.number().nonnegative().default(1),
    message: z.string().optional(),
  }),
  z.strictObject({
    kind: z.literal('server-error'),
    status: z.number().int().min(500).max(599).default(500),
    message: z.string().optional(),
  }),
  /** Sends `afterChunks` SSE events of the reply (0 = none, only headers), then destroys the socket. */
  z.strictObject({ kind: z.literal('disconnect'), afterChunks: z.number().int().nonnegative().default(0) }),
  /** Sends the headers, then nothing (or only SSE keep-alive comments) until the client gives up. */
  z.strictObject({
    kind: z.literal('hang'),
    keepAlive: z.boolean().default(false),
    keepAliveIntervalMs: z.number().int().positive().default(1000),
  }),
  /** A valid first event, then an event whose data is not JSON, then the stream ends (no [DONE]). */
  z.strictObject({ kind: z.literal('malformed-sse') }),
  /** 200 with a stream (or body) that carries no choices at all. */
  z.strictObject({ kind: z.literal('empty') }),
  /** 200, then the body ends before a single byte: llama-cpp-python's answer to a streamed over-long prompt. */
  z.strictObject({ kind: z.literal('closed') }),
  /**
   * A real server's answer replayed as it was recorded (the provider error fixtures): this status, these
   * headers, and the body — a string byte for byte, any other JSON value serialized as application/json.
   */
  z.strictObject({
    kind: z.literal('recorded'),
    status: z.number().int().min(200).max(599),
    headers: z.record(z.string(), z.string()).default({}),
    body: z.json(),
  }),
  /** An arbitrary error status with an OpenAI-style error body. */
  z.strictObject({
    kind: z.literal('status'),
    status: z.number().int().min(400).max(599),
    code: z.string().optional(),
    type: z.string().optional(),
    message: z.string().optional(),
  }),
]);
export type Fault = z.output<typeof Fault>;

export const ReplyMatch = z.strictObject({
  /** The reply applies when the last `user` message's text contains this string. */
  lastUserContains: z.string(),
});
export type ReplyMatch = z.output<typeof ReplyMatch>;

export const FinishReason = z.enum(['stop', 'tool_calls', 'length', 'content_filter']);
export type FinishReason = z.output<typeof FinishReason>;

export const Reply = z
  .strictObject({
    text: z.string().optional(),
    reasoning: z.string().optional(),
    toolCalls: z.array(ScriptToolCall).min(1).optional(),
    finishReason: FinishReason.optional(),
    delayMs: z.number().int().nonnegative().default(0),
    chunkDelayMs: z.number().int().nonnegative().default(0),
    chunkSize: z.number().int().positive().default(8),
    usage: UsageOverride.optional(),
    /**
     * Streamed: every text chunk carries the token counts so far (as servers with continuous usage stats
     * do), not only the usage chunk at the end.
     */
    usageEveryChunk: z.boolean().default(false),
    fault: Fault.optional(),
    match: ReplyMatch.optional(),
    repeat: z.number().int().positive().default(1),
    /** A streamed reply stops after `afterChunks` chunks until the test calls `release(key)` (in-process only). */
    hold: z.strictObject({ afterChunks: z.number().int().nonnegative(), key: z.string().min(1) }).optional(),
  })
  .superRefine((reply, ctx) => {
    const ids = new Set<string>();
    for (const [i, call] of (reply.toolCalls ?? []).entries()) {
      if (ids.has(call.id)) {
        ctx.addIssue({ code: 'custom', path: ['toolCalls', i, 'id'], message: `duplicate tool call id "${call.id}"` });
      }
      ids.add(call.id);
    }
  });
export type Reply = z.output<typeof Reply>;

export const CacheMode = z.enum(['deepseek', 'openai', 'off']);
export type CacheMode = z.output<typeof CacheMode>;

/**
 * Which assistant messages must carry `reasoning_content` in DeepSeek thinking mode (see
 * validate-request.ts): `current-turn` = those after the last user message, `all-turns` = all.
 */
export const ReasoningPassBack = z.enum(['current-turn', 'all-turns']);
export type ReasoningPassBack = z.output<typeof ReasoningPassBack>;

/**
 * A per-API-key rate quota enforced on chat completions like OpenAI's RPM/TPM limits (see rate-quota.ts).
 * Limits are per minute; `burstSeconds` (default 1) is how many seconds' worth may be sent at once.
 */
export const QuotaFields = z.strictObject({
  requestsPerMinute: z.number().int().positive().optional(),
  tokensPerMinute: z.number().int().positive().optional(),
  burstSeconds: z.number().positive().optional(),
});
export const Quota = QuotaFields.refine(
  (quota) => quota.requestsPerMinute !== undefined || quota.tokensPerMinute !== undefined,
  {
    message: 'a quota needs requestsPerMinute or tokensPerMinute',
  },
);
export type Quota = z.output<typeof Quota>;

export const Script = z
  .strictObject({
    models: z.array(z.string().min(1)).min(1).default(['deepseek-chat', 'deepseek-reasoner']),
    /**
     * Context windows `GET /v1/models` reports, by model id, as vLLM does (`max_model_len`): what a worker on a
     * generic endpoint learns at start. A model without one is listed without a window.
     */
    contextWindows: z.record(z.string().min(1), z.number().int().positive()).optional(),
    cache: CacheMode.default('deepseek'),
    mode: z.enum(['ordered', 'match']).default('ordered'),
    reasoningPassBack: ReasoningPassBack.default('current-turn'),
    /**
     * `new-reply`: every request takes a reply. `same-reply`: a request equal to one already answered (same
     * model, messages and tools: a retried step, whose request the log derives again byte for byte) gets
     * that answer again and takes none, as a deterministic model would; a reply with a `fault` is not kept,
     * so the retry after it takes the next one.
     */
    retries: z.enum(['new-reply', 'same-reply']).default('new-reply'),
    replies: z.array(Reply),
    /**
     * Played whenever no reply of `replies` is left (ordered) or none is left that matches (match), as
     * often as asked: a script that answers an unbounded number of requests. Its `repeat` is not used.
     */
    default: Reply.optional(),
    quota: Quota.optional(),
  })
  .superRefine((script, ctx) => {
    for (const model of Object.keys(script.contextWindows ?? {})) {
      if (!script.models.includes(model)) {
        ctx.addIssue({
          code: 'custom',
          path: ['contextWindows', model],
          message: `"${model}" is not one of the script's models`,
        });
      }
    }
    if (script.default?.match !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['default', 'match'],
        message: 'the `default` reply is played when no other reply is left: it takes no `match`',
      });
    }
    if (script.mode !== 'ordered') return;
    for (const [i, reply] of script.replies.entries()) {
      if (reply.match !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['replies', i, 'match'],
          message: '`match` is only used with `mode: match`',
        });
      }
    }
  });
/** A script as written (defaults may be omitted). */
export type Script = z.input<typeof Script>;
/** A validated script with every default filled in. */
export type LoadedScript = z.output<typeof Script>;

/** `$.replies[2].fault.kind` for a zod issue path. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) out += `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Validates an in-memory script; `source` names it in errors (a file path or `<inline script>`). */
export function parseScript(value: unknown, source = '<inline script>'): LoadedScript {
  const result = Script.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const path = jsonPath(first?.path ?? []);
  const more = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more problem(s))` : '';
  throw new ScriptError(
    ScriptErrorCode.Invalid,
    `${source}: invalid script at ${path}: ${first?.message ?? 'invalid'}${more}`,
    { file: source, path },
  );
}

/** Reads and validates a `.json`, `.yaml` or `.yml` script file. */
export function loadScript(file: string): LoadedScript {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ScriptError(
      ScriptErrorCode.Unreadable,
      `${file}: cannot read script: ${error instanceof Error ? error.message : String(error)}`,
      { file },
      { cause: error },
    );
  }
  const ext = extname(file).toLowerCase();
  let value: unknown;
  if (ext === '.json') {
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ScriptError(
        ScriptErrorCode.Invalid,
        `${file}: invalid JSON: ${error instanceof Error ? error.message : String(error)}`,
        { file },
      );
    }
  } else if (ext === '.yaml' || ext === '.yml') {
    const doc = parseDocument(text, { prettyErrors: true });
    const problem = doc.errors[0];
    if (problem !== undefined) {
      const pos = problem.linePos?.[0];
      const where = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
      throw new ScriptError(
        ScriptErrorCode.Invalid,
        `${file}: invalid YAML${where}: ${(problem.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
        { file, line: pos?.line ?? null, column: pos?.col ?? null },
      );
    }
    value = doc.toJS();
  } else {
    throw new ScriptError(
      ScriptErrorCode.Invalid,
      `${file}: unknown script format "${ext}" (use .json, .yaml or .yml)`,
      { file },
    );
  }
  return parseScript(value, file);
}
