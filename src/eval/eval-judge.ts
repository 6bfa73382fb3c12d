// Judges of an eval step: the built-in structural judge, and the runner that asks every judge in turn
// and records a failing one as data (score null) instead of failing the step.
import type { BuiltRequest } from '../core/build-request.js';
import type { JudgeOutcome } from '../shared/eval-contracts.js';
import type { AnswerFacts, StepDiff, ToolCallDiff } from './step-diff.js';

export interface JudgeInput {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  /** The request the source step sent (deep-frozen), for judges that want the context. */
  readonly request: BuiltRequest;
  readonly source: AnswerFacts;
  readonly candidate: AnswerFacts;
  readonly diff: StepDiff;
}

/** `score` is in [0, 1]. */
export interface JudgeVerdict {
  readonly score: number;
  readonly reason: string;
}

export interface EvalJudge {
  readonly name: string;
  judge(input: JudgeInput): JudgeVerdict | Promise<JudgeVerdict>;
}

export type { JudgeOutcome };

/** Weights of the structural score; tool calls weigh most because they are what the agent acts on. */
const TOOL_CALLS_WEIGHT = 0.5;
const TEXT_WEIGHT = 0.3;
const FINISH_REASON_WEIGHT = 0.2;

/** A reason names at most this many differing tool calls and pointers per call: one line, not a report. */
const REASON_TOOL_CALLS = 3;
const REASON_POINTERS = 3;

const MAX_REASON_LENGTH = 500;
const DEFAULT_TIMEOUT_MS = 60_000;
/** setTimeout fires at once for anything longer than this (a 32-bit signed count of milliseconds). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * 1 when text, tool calls and finish reason are all equal. Otherwise a weighted sum:
 * tool calls 0.5 × (fraction of 'same' calls over the longer list; 1 when both are empty),
 * text 0.3 × text similarity, finish reason 0.2 × (1 if equal, else 0).
 */
export const structuralJudge: EvalJudge = {
  name: 'structural',
  judge({ diff }) {
    if (diff.textEqual && diff.toolCallsEqual && diff.finishReason.equal)
      return { score: 1, reason: 'text, tool calls and finish reason equal' };
    const calls = diff.toolCalls.length;
    const sameCalls = diff.toolCalls.filter((call) => call.verdict === 'same').length;
    const score =
      TOOL_CALLS_WEIGHT * (calls === 0 ? 1 : sameCalls / calls) +
      TEXT_WEIGHT * diff.textSimilarity +
      FINISH_REASON_WEIGHT * (diff.finishReason.equal ? 1 : 0);
    return { score, reason: structuralReason(diff) };
  },
};

/** One line naming what differs, e.g. "tool call 0 arguments differ at /path; text 0.62 similar". */
function structuralReason(diff: StepDiff): string {
  const parts: string[] = [];
  const differing = diff.toolCalls.filter((call) => call.verdict !== 'same');
  parts.push(...differing.slice(0, REASON_TOOL_CALLS).map(describeToolCall));
  if (differing.length > REASON_TOOL_CALLS)
    parts.push(`${differing.length - REASON_TOOL_CALLS} more tool call difference(s)`);
  if (!diff.textEqual) parts.push(`text ${diff.textSimilarity.toFixed(2)} similar`);
  if (!diff.finishReason.equal)
    parts.push(`finish reason ${diff.finishReason.source ?? 'none'} -> ${diff.finishReason.candidate ?? 'none'}`);
  // Names and pointers come from model output and may hold line breaks; the reason stays one line.
  return parts.join('; ').replace(/\s+/g, ' ');
}

function describeToolCall(call: ToolCallDiff): string {
  const prefix = `tool call ${call.index}`;
  switch (call.verdict) {
    case 'missing':
      return `${prefix} missing (${call.source?.name ?? '?'})`;
    case 'extra':
      return `${prefix} extra (${call.candidate?.name ?? '?'})`;
    case 'name-differs':
      return `${prefix} name ${call.source?.name ?? '?'} -> ${call.candidate?.name ?? '?'}${argumentsNote(call)}`;
    case 'arguments-differ':
      return `${prefix}${argumentsNote(call)}`;
    case 'same':
      return `${prefix} same`;
  }
}

function argumentsNote(call: ToolCallDiff): string {
  const paths = call.argumentPaths;
  if (paths.length === 0) return '';
  // The empty pointer is the whole document: invalid JSON on a side, or values of different kinds.
  if (paths.length === 1 && paths[0] === '') return ' arguments differ as a whole';
  const shown = paths.slice(0, REASON_POINTERS).map((path) => (path === '' ? '(whole)' : path));
  const more = paths.length > REASON_POINTERS ? ` (+${paths.length - REASON_POINTERS} more)` : '';
  return ` arguments differ at ${shown.join(', ')}${more}`;
}

/**
 * Runs every judge, one after another in the given order. A judge that throws, rejects, times out
 * (timeoutMs, default 60 000) or returns a score outside [0, 1], a non-finite score or a non-string
 * reason gives an outcome with score null and `error` set. Reasons are cut to 500 characters.
 */
export async function runJudges(
  judges: readonly EvalJudge[],
  input: JudgeInput,
  options?: { readonly timeoutMs?: number },
): Promise<JudgeOutcome[]> {
  const timeoutMs = options?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new RangeError(`judge timeout must be a positive number of ms, got ${timeoutMs}`);
  const outcomes: JudgeOutcome[] = [];
  for (const judge of judges) outcomes.push(await runJudge(judge, input, Math.min(timeoutMs, MAX_TIMER_MS)));
  return outcomes;
}

async function runJudge(judge: EvalJudge, input: JudgeInput, timeoutMs: number): Promise<JudgeOutcome> {
  const name = judge.name;
  try {
    const verdict = checkVerdict(await withTimeout(judge, input, timeoutMs));
    if (typeof verdict === 'string') return { judge: name, score: null, reason: '', error: cut(verdict) };
    return { judge: name, score: verdict.score, reason: cut(verdict.reason) };
  } catch (error) {
    return { judge: name, score: null, reason: '', error: cut(describeError(error)) };
  }
}

/** The judge's verdict, or a rejection once `timeoutMs` passes; the timer never outlives the call. */
async function withTimeout(judge: EvalJudge, input: JudgeInput, timeoutMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    // Started inside an async function so a synchronous throw becomes a rejection like any other.
    const verdict = (async () => judge.judge(input))();
    // The race keeps a handler on the verdict, so a judge that rejects after its timeout stays handled.
    return await Promise.race([verdict, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The verdict a judge returned, or why it is not a usable one. Each field is read once: what is checked
 * is what gets recorded, even from an object with getters.
 */
function checkVerdict(verdict: unknown): JudgeVerdict | string {
  if (typeof verdict !== 'object' || verdict === null) return 'the judge returned no verdict object';
  const { score, reason } = verdict as { score?: unknown; reason?: unknown };
  if (typeof score !== 'number' || !Number.isFinite(score)) return `score is not a finite number: ${String(score)}`;
  if (score < 0 || score > 1) return `score ${score} is outside [0, 1]`;
  if (typeof reason !== 'string') return `reason is not a string but ${typeof reason}`;
  return { score, reason };
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  try {
    return String(error);
  } catch {
    return 'the judge failed with a value that cannot be described';
  }
}

/** At most MAX_REASON_LENGTH UTF-16 units, never ending in half a surrogate pair. */
function cut(text: string): string {
  if (text.length <= MAX_REASON_LENGTH) return text;
  const head = text.slice(0, MAX_REASON_LENGTH);
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
}
