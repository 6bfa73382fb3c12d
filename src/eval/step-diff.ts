// The diff of one recorded model answer (the source) against a re-sent one (the candidate): text
// similarity, tool calls matched by position and compared structurally, finish reason, tokens, cost and
// latency; and the run-level totals over many such diffs. Pure: no I/O, no clock.
import { diffWordsWithSpace } from 'diff';
import type { Usage } from '../core/events.js';

/** What one answer (the recorded one or the candidate) amounts to, as the diff sees it. */
export interface AnswerFacts {
  readonly content: string | null;
  readonly reasoning?: string;
  /** `arguments` is the raw JSON string the model produced (it may be invalid JSON). */
  readonly toolCalls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
  readonly finishReason: string | null;
  readonly usage: Usage | null;
  readonly costUsd: number | null;
  readonly latencyMs: number | null;
}

export type ToolCallVerdict = 'same' | 'arguments-differ' | 'name-differs' | 'missing' | 'extra';

export interface ToolCallDiff {
  /** Position in the model's order. */
  readonly index: number;
  /** Null when 'extra'. */
  readonly source: { readonly name: string; readonly arguments: string } | null;
  /** Null when 'missing'. */
  readonly candidate: { readonly name: string; readonly arguments: string } | null;
  readonly verdict: ToolCallVerdict;
  /**
   * JSON pointers (RFC 6901, e.g. "/path/0") where parsed arguments differ, at most 20; [""] when either
   * side is not valid JSON and the raw strings differ. Empty when 'same' (and when 'missing' or 'extra').
   */
  readonly argumentPaths: readonly string[];
}

/** `delta` is candidate - source, null if either is null. */
export interface NumberPair {
  readonly source: number | null;
  readonly candidate: number | null;
  readonly delta: number | null;
}

export interface StepDiff {
  /** 0..1 word-level similarity of the answers' text (after trimming and collapsing whitespace); 1 when both empty or null. */
  readonly textSimilarity: number;
  /** The normalized texts are equal. */
  readonly textEqual: boolean;
  readonly toolCalls: readonly ToolCallDiff[];
  /** Every entry is 'same' (so both lists have the same length). */
  readonly toolCallsEqual: boolean;
  readonly finishReason: { readonly source: string | null; readonly candidate: string | null; readonly equal: boolean };
  /** inputUncached + cacheRead. */
  readonly inputTokens: NumberPair;
  /** cacheRead. */
  readonly cachedTokens: NumberPair;
  /** output. */
  readonly outputTokens: NumberPair;
  readonly costUsd: NumberPair;
  readonly latencyMs: NumberPair;
}

/** At most this many differing pointers are listed per tool call: enough to point at the change. */
const MAX_ARGUMENT_PATHS = 20;

/**
 * The word diff gives up past this many token edits (words, punctuation and whitespace runs each count):
 * its cost grows with the product of text length and edit count, and two long, unrelated answers would
 * otherwise stall the step. Past it, similarity falls back to the overlap of the token multisets.
 */
const MAX_TOKEN_EDITS = 2000;

export function diffStep(source: AnswerFacts, candidate: AnswerFacts): StepDiff {
  const toolCalls = diffToolCalls(source.toolCalls, candidate.toolCalls);
  return {
    textSimilarity: textSimilarity(source.content, candidate.content),
    textEqual: normalizeText(source.content) === normalizeText(candidate.content),
    toolCalls,
    toolCallsEqual: toolCalls.every((call) => call.verdict === 'same'),
    finishReason: {
      source: source.finishReason,
      candidate: candidate.finishReason,
      equal: source.finishReason === candidate.finishReason,
    },
    inputTokens: numberPair(inputTokens(source.usage), inputTokens(candidate.usage)),
    cachedTokens: numberPair(source.usage?.cacheRead ?? null, candidate.usage?.cacheRead ?? null),
    outputTokens: numberPair(source.usage?.output ?? null, candidate.usage?.output ?? null),
    costUsd: numberPair(source.costUsd, candidate.costUsd),
    latencyMs: numberPair(source.latencyMs, candidate.latencyMs),
  };
}

/**
 * 2 × (characters in the parts both texts share) / (length of both), over a word diff of the normalized
 * texts. Exactly 1 iff the normalized texts are equal; symmetric; 1 when both are empty or null.
 */
export function textSimilarity(a: string | null, b: string | null): number {
  const left = normalizeText(a);
  const right = normalizeText(b);
  if (left === right) return 1;
  const total = left.length + right.length;
  // The diff may pick a different (equally short) edit script when its sides swap; a fixed order keeps
  // the score independent of which answer is the source.
  const [first, second] = left < right ? [left, right] : [right, left];
  const changes = diffWordsWithSpace(first, second, { maxEditLength: MAX_TOKEN_EDITS });
  const common = changes
    ? changes.reduce((sum, change) => (change.added || change.removed ? sum : sum + change.value.length), 0)
    : sharedTokenCharacters(first, second);
  // Unequal texts never score 1, not even when the fallback sees the same tokens in another order.
  return Math.min((2 * common) / total, 1 - 1 / total);
}

/** Matches tool calls by position; ids are never compared (they are random per answer). */
export function diffToolCalls(source: AnswerFacts['toolCalls'], candidate: AnswerFacts['toolCalls']): ToolCallDiff[] {
  const diffs: ToolCallDiff[] = [];
  for (let index = 0; index < Math.max(source.length, candidate.length); index++) {
    const s = source[index];
    const c = candidate[index];
    const sourceCall = s ? { name: s.name, arguments: s.arguments } : null;
    const candidateCall = c ? { name: c.name, arguments: c.arguments } : null;
    if (!s || !c) {
      const verdict = s ? 'missing' : 'extra';
      diffs.push({ index, source: sourceCall, candidate: candidateCall, verdict, argumentPaths: [] });
      continue;
    }
    const argumentPaths = differingArgumentPaths(s.arguments, c.arguments);
    const verdict: ToolCallVerdict =
      s.name !== c.name ? 'name-differs' : argumentPaths.length > 0 ? 'arguments-differ' : 'same';
    diffs.push({ index, source: sourceCall, candidate: candidateCall, verdict, argumentPaths });
  }
  return diffs;
}

/** Where two raw argument strings differ: structurally when both are JSON, as a whole otherwise. */
function differingArgumentPaths(source: string, candidate: string): string[] {
  const left = parseJson(source);
  const right = parseJson(candidate);
  if (left === NOT_JSON || right === NOT_JSON) return source === candidate ? [] : [''];
  return differingPointers(left, right);
}

const NOT_JSON = Symbol('not JSON');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/**
 * The deepest pointers at which two parsed JSON values differ, in document order, at most
 * MAX_ARGUMENT_PATHS. Object key order is irrelevant, array order is not. Walks with an explicit stack:
 * a model can nest arguments deeper than the call stack allows.
 */
function differingPointers(source: unknown, candidate: unknown): string[] {
  const found: string[] = [];
  const pending: { pointer: string; source: unknown; candidate: unknown }[] = [{ pointer: '', source, candidate }];
  while (pending.length > 0 && found.length < MAX_ARGUMENT_PATHS) {
    const next = pending.pop();
    if (!next) break;
    const children = childPairs(next.source, next.candidate);
    if (children === null) {
      if (next.source !== next.candidate) found.push(next.pointer);
      continue;
    }
    // Pushed in reverse so they are visited (and reported) in order.
    for (let i = children.length - 1; i >= 0; i--) {
      const child = children[i];
      if (!child) continue;
      pending.push({ pointer: `${next.pointer}/${escapePointerToken(child.key)}`, ...child });
    }
  }
  return found;
}

/** A missing member: differs from every JSON value, `null` included. */
const ABSENT = Symbol('absent');

/**
 * The member pairs to compare below two containers of the same kind, or null when the two values are
 * compared as a whole (scalars, or containers of different kinds, which then differ).
 */
function childPairs(
  source: unknown,
  candidate: unknown,
): { key: string; source: unknown; candidate: unknown }[] | null {
  if (Array.isArray(source) && Array.isArray(candidate)) {
    return Array.from({ length: Math.max(source.length, candidate.length) }, (_, i) => ({
      key: String(i),
      source: i < source.length ? (source[i] as unknown) : ABSENT,
      candidate: i < candidate.length ? (candidate[i] as unknown) : ABSENT,
    }));
  }
  if (isPlainObject(source) && isPlainObject(candidate)) {
    // Sorted so the report does not depend on the order either model wrote its keys in.
    const keys = [...new Set([...Object.keys(source), ...Object.keys(candidate)])].sort();
    return keys.map((key) => ({
      key,
      source: Object.hasOwn(source, key) ? source[key] : ABSENT,
      candidate: Object.hasOwn(candidate, key) ? candidate[key] : ABSENT,
    }));
  }
  return null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 6901: "~" is written "~0" and "/" is written "~1". */
function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The characters two texts share by token counts alone, order ignored: the fallback for long texts. */
function sharedTokenCharacters(a: string, b: string): number {
  const counts = new Map<string, number>();
  for (const token of tokens(a)) counts.set(token, (counts.get(token) ?? 0) + 1);
  let shared = 0;
  for (const token of tokens(b)) {
    const left = counts.get(token) ?? 0;
    if (left === 0) continue;
    counts.set(token, left - 1);
    shared += token.length;
  }
  return shared;
}

/** Words, single punctuation marks and whitespace runs: roughly the diff's own tokens. */
function tokens(text: string): string[] {
  return text.match(/[\p{L}\p{N}_]+|\s+|[^\p{L}\p{N}_\s]/gu) ?? [];
}

/** Trimmed, with every whitespace run collapsed to one space; null counts as empty. */
function normalizeText(text: string | null): string {
  return (text ?? '').trim().replace(/\s+/g, ' ');
}

function inputTokens(usage: Usage | null): number | null {
  return usage ? usage.inputUncached + usage.cacheRead : null;
}

function numberPair(source: number | null, candidate: number | null): NumberPair {
  return { source, candidate, delta: source === null || candidate === null ? null : candidate - source };
}

export interface Distribution {
  readonly count: number;
  readonly min: number | null;
  readonly p50: number | null;
  readonly p90: number | null;
  readonly max: number | null;
  readonly mean: number | null;
}

export interface DiffTotals {
  readonly steps: number;
  /** Counts of steps. */
  readonly textEqual: number;
  readonly toolCallsEqual: number;
  readonly finishReasonEqual: number;
  /** Over all steps. */
  readonly textSimilarity: Distribution;
  /** Sums over steps; a null counts as 0. */
  readonly costUsd: { readonly source: number; readonly candidate: number };
  readonly outputTokens: { readonly source: number; readonly candidate: number };
  readonly cachedTokens: { readonly source: number; readonly candidate: number };
  /** Over the steps that have a value on that side. */
  readonly latencyMs: { readonly source: Distribution; readonly candidate: Distribution };
}

/** Min, nearest-rank p50 and p90, max and mean; an empty list gives count 0 and nulls. */
export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) return { count: 0, min: null, p50: null, p90: null, max: null, mean: null };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (percent: number): number => sorted[Math.max(1, Math.ceil((percent / 100) * sorted.length)) - 1] ?? 0;
  return {
    count: sorted.length,
    min: sorted[0] ?? null,
    p50: rank(50),
    p90: rank(90),
    max: sorted[sorted.length - 1] ?? null,
    mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
  };
}

export function diffTotals(diffs: readonly StepDiff[]): DiffTotals {
  const count = (test: (diff: StepDiff) => boolean): number => diffs.filter(test).length;
  const sums = (pick: (diff: StepDiff) => NumberPair): { source: number; candidate: number } => ({
    source: diffs.reduce((sum, diff) => sum + (pick(diff).source ?? 0), 0),
    candidate: diffs.reduce((sum, diff) => sum + (pick(diff).candidate ?? 0), 0),
  });
  const present = (values: (number | null)[]): number[] => values.filter((value) => value !== null);
  return {
    steps: diffs.length,
    textEqual: count((diff) => diff.textEqual),
    toolCallsEqual: count((diff) => diff.toolCallsEqual),
    finishReasonEqual: count((diff) => diff.finishReason.equal),
    textSimilarity: distribution(diffs.map((diff) => diff.textSimilarity)),
    costUsd: sums((diff) => diff.costUsd),
    outputTokens: sums((diff) => diff.outputTokens),
    cachedTokens: sums((diff) => diff.cachedTokens),
    latencyMs: {
      source: distribution(present(diffs.map((diff) => diff.latencyMs.source))),
      candidate: distribution(present(diffs.map((diff) => diff.latencyMs.candidate))),
    },
  };
}
