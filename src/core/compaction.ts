// Compaction as pure functions of the log: which surface range a summary may replace (never cutting
// a tool call from its result, keeping recent turns verbatim), the summary request (the last step's
// request plus one instruction, so it shares the cached prefix), and model-free tool-output pruning.
import type { BuiltRequest } from './build-request.js';
import { assembleRequest } from './build-request.js';
import type { SessionEvent } from './events.js';
import type { Message } from './messages.js';
import { foldRequestHeader } from './fold-request-header.js';
import { applySurfaceEvent, deriveMessages } from './surface.js';

export const COMPACTION_INSTRUCTION =
  'Summarize the conversation so far for your own later use: the task, decisions made, facts learned (files, commands, results), and what remains to do. Be concise and concrete; do not call tools.';
export const SUMMARY_PREFIX = 'Summary of the earlier conversation (it replaced those messages):\n\n';

/**
 * For each surface position, the seq of the event whose message it stands for: a one-for-one replace
 * (pruning) keeps the originals' seqs; a summary takes the seq of the first message it replaced. So
 * positions stay ordered by when their content entered the log, which turn boundaries rely on.
 */
export function surfaceSourceSeqs(events: readonly SessionEvent[]): number[] {
  const messages: Message[] = [];
  const seqs: number[] = [];
  for (const event of events) {
    const before = messages.length;
    const replaced = applySurfaceEvent(messages, event);
    if (replaced && event.type === 'surface/replace') {
      const { start, end } = event.range;
      const originals = seqs.slice(start, end + 1);
      const standIns =
        originals.length === event.messages.length ? originals : event.messages.map(() => originals[0] ?? event.seq);
      seqs.splice(start, end - start + 1, ...standIns);
    } else {
      for (let i = before; i < messages.length; i++) seqs.push(event.seq);
    }
  }
  return seqs;
}

/**
 * The surface range a summary replaces: everything before the first message of the most recent
 * `keepRecentTurns` turns (falling back to fewer kept turns when that leaves nothing to summarize).
 * Turn starts are safe cut points: every earlier tool call is answered by then. Null when the
 * surface has nothing to compact.
 */
export function compactionRange(
  events: readonly SessionEvent[],
  keepRecentTurns: number,
): { start: number; end: number } | null {
  const sources = surfaceSourceSeqs(events);
  if (sources.length === 0) return null;
  const turnStarts = events.filter((e) => e.type === 'turn/start').map((e) => e.seq);
  const lastStart = events.findLastIndex((e) => e.type === 'step/start');
  const openStepless = lastStart === -1 || events.findLastIndex((e) => e.type === 'step/end') > lastStart;
  for (let keep = Math.min(keepRecentTurns, turnStarts.length); keep >= 0; keep--) {
    const boundarySeq = keep === 0 ? Number.POSITIVE_INFINITY : (turnStarts[turnStarts.length - keep] ?? 0);
    const cut = keep === 0 ? sources.length : sources.findIndex((seq) => seq > boundarySeq);
    const end = (cut === -1 ? sources.length : cut) - 1;
    // A single summary message over a single message gains nothing.
    if (end >= 1 && openStepless) return { start: 0, end };
  }
  return null;
}

/**
 * The summary request: exactly the header and messages the next step would send, plus the
 * instruction as a final user message — a provider-cache hit on everything but the instruction.
 */
export function buildCompactionRequest(
  sessionId: string,
  events: readonly SessionEvent[],
  maxTokens?: number,
): BuiltRequest {
  const header = foldRequestHeader(events);
  let last: { turn: number; step: number } | undefined;
  for (let i = events.length - 1; i >= 0 && !last; i--) {
    const e = events[i];
    if (e?.type === 'step/start') last = { turn: e.turn, step: e.step };
  }
  const withConfig =
    header && maxTokens !== undefined ? { ...header, config: { ...header.config, maxTokens } } : header;
  return assembleRequest(sessionId, withConfig, last, [
    ...deriveMessages(events),
    { role: 'user', content: COMPACTION_INSTRUCTION },
  ]);
}

/** Rough token estimate of messages (4 characters per token): for pressure and reporting only. */
export function estimateTokens(messages: readonly Message[]): number {
  return Math.ceil(JSON.stringify(messages).length / 4);
}

/**
 * Model-free pruning: tool outputs longer than `minChars`, before the most recent `keepRecentTurns`
 * turns, each replaced (one single-position replace per output) by a short stub under the same call id.
 */
export function pruneReplacements(
  events: readonly SessionEvent[],
  keepRecentTurns: number,
  minChars: number,
): { position: number; message: Message }[] {
  const surface = deriveMessages(events);
  const range = compactionRange(events, keepRecentTurns);
  if (!range) return [];
  const out: { position: number; message: Message }[] = [];
  for (let i = range.start; i <= range.end; i++) {
    const m = surface[i];
    if (m?.role !== 'tool' || m.content.length <= minChars || m.content.startsWith('[pruned')) continue;
    out.push({
      position: i,
      message: {
        role: 'tool',
        toolCallId: m.toolCallId,
        content: `[pruned: ${m.content.length} characters of tool output]`,
      },
    });
  }
  return out;
}
