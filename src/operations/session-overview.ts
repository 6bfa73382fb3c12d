// What a log adds up to (`dh show`, dh chat's /show, the console's detail and list): tokens by kind, the
// cache-read share, turns, steps, requests, how turns ended, an open turn, and the subagents it delegated to.
import { delegationLinks } from '../audit/delegation-links.js';
import {
  addUsage,
  cacheReadShare,
  delegationOf,
  emptyUsage,
  usageTotal,
  type SessionEvent,
  type Usage,
} from '../core/index.js';

/** One delegation call of the session and the child it started, from the session's log. */
export interface SubagentLine {
  readonly callId: string;
  readonly turn: number;
  readonly step: number;
  readonly sessionId: string;
  /**
   * How the child's task ended (its turn-end reason, or `unfinished`); `running` while the call has no
   * result; `no outcome` when the call ended (interrupted) before its child reported.
   */
  readonly ended: string;
  /** What the parent recorded it spent (its own subagents included); null without an outcome. */
  readonly tokens: number | null;
  /** Copied from the fork's origin: the child is the origin's. */
  readonly inSeed: boolean;
}

export interface SessionOverview {
  readonly sessionId: string;
  readonly events: number;
  readonly firstAt: number | null;
  readonly lastAt: number | null;
  readonly parent: { readonly sessionId: string; readonly seedLength: number } | null;
  /** The session is a subagent: who delegated to it, by which call, how deep. */
  readonly delegation: { readonly parentSessionId: string; readonly callId: string; readonly depth: number } | null;
  readonly model: string | null;
  readonly turns: number;
  readonly steps: number;
  readonly requests: number;
  readonly toolCalls: number;
  readonly interruptedAnswers: number;
  /** How turns ended, by reason. */
  readonly turnEnds: Readonly<Record<string, number>>;
  /** Model answers' usage summed (compaction summaries are counted apart). */
  readonly usage: Usage & { readonly total: number };
  readonly compactionUsage: Usage;
  /** cacheRead / (cacheRead + inputUncached); null before any input was reported. */
  readonly cacheReadShare: number | null;
  /** From the log alone: a turn is open (running, or its run stopped mid-turn), or the session is idle. */
  readonly logStatus: string;
  readonly subagents: readonly SubagentLine[];
  /** What the subagents' outcomes record they spent (part of the session's budget, not of `usage`). */
  readonly subagentUsage: Usage & { readonly total: number };
}

export function sessionOverview(sessionId: string, events: readonly SessionEvent[]): SessionOverview {
  const usage = emptyUsage();
  const compactionUsage = emptyUsage();
  const turnEnds: Record<string, number> = {};
  let model: string | null = null;
  let openTurn: number | null = null;
  let lastEnd: { turn: number; reason: string } | null = null;
  let toolCalls = 0;
  let interruptedAnswers = 0;
  let parent: SessionOverview['parent'] = null;
  for (const event of events) {
    switch (event.type) {
      case 'session/start':
        parent = event.parent ?? null;
        break;
      case 'request/header':
        model = `${event.header.config.provider}/${event.header.config.model}`;
        break;
      case 'turn/start':
        openTurn = event.turn;
        break;
      case 'turn/end':
        openTurn = null;
        lastEnd = { turn: event.turn, reason: event.reason };
        turnEnds[event.reason] = (turnEnds[event.reason] ?? 0) + 1;
        break;
      case 'assistant/message':
        addUsage(usage, event.usage);
        toolCalls += event.toolCalls.length;
        if (event.interrupted) interruptedAnswers++;
        break;
      case 'compact/summary':
        addUsage(compactionUsage, event.usage);
        break;
      default:
        break;
    }
  }
  const logStatus =
    openTurn !== null
      ? `turn ${openTurn} is open (running now, or its run stopped mid-turn: \`dh resume\` repairs it)`
      : lastEnd
        ? `idle; turn ${lastEnd.turn} ended ${lastEnd.reason}`
        : 'idle; no turn yet';
  const delegation = delegationOf(events);
  const subagentUsage = emptyUsage();
  const subagents = delegationLinks(events).map((link): SubagentLine => {
    const outcome = link.result?.child ?? null;
    addUsage(subagentUsage, outcome?.usage);
    return {
      callId: link.callId,
      turn: link.turn,
      step: link.step,
      sessionId: link.started?.childSessionId ?? outcome?.sessionId ?? '',
      ended: outcome !== null ? outcome.reason : link.result === null ? 'running' : 'no outcome',
      tokens: outcome !== null ? usageTotal(outcome.usage) : null,
      inSeed: link.inSeed,
    };
  });
  return {
    sessionId,
    events: events.length,
    firstAt: events[0]?.at ?? null,
    lastAt: events.at(-1)?.at ?? null,
    parent,
    delegation: delegation
      ? { parentSessionId: delegation.parentSessionId, callId: delegation.callId, depth: delegation.depth }
      : null,
    model,
    turns: events.filter((e) => e.type === 'turn/start').length,
    steps: events.filter((e) => e.type === 'step/start').length,
    requests: events.filter((e) => e.type === 'request/sent').length,
    toolCalls,
    interruptedAnswers,
    turnEnds,
    usage: { ...usage, total: usageTotal(usage) },
    compactionUsage,
    cacheReadShare: cacheReadShare(usage),
    logStatus,
    subagents,
    subagentUsage: { ...subagentUsage, total: usageTotal(subagentUsage) },
  };
}

export function renderOverview(o: SessionOverview, workflowStatus: string | null): string {
  const time = (at: number | null) => (at === null ? '-' : new Date(at).toISOString());
  const ends = Object.entries(o.turnEnds)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  const d = o.delegation;
  const lines = [
    `session ${o.sessionId}${o.parent ? ` (fork of ${o.parent.sessionId}, seed seqs 0..${o.parent.seedLength - 1})` : ''}` +
      (d ? ` (subagent of ${d.parentSessionId}, call ${d.callId}, depth ${d.depth})` : ''),
    `status: ${o.logStatus}`,
    ...(workflowStatus !== null ? [`workflow: ${workflowStatus}`] : []),
    `model: ${o.model ?? '-'}`,
    `log: ${o.events} events, ${time(o.firstAt)} .. ${time(o.lastAt)}`,
    `turns: ${o.turns}${ends !== '' ? ` (${ends})` : ''}; steps: ${o.steps}; requests sent: ${o.requests}; tool calls: ${o.toolCalls}` +
      (o.interruptedAnswers > 0 ? `; interrupted answers: ${o.interruptedAnswers}` : ''),
    `tokens: ${o.usage.total} total = input ${o.usage.inputUncached} uncached + ${o.usage.cacheRead} cache read, ` +
      `output ${o.usage.output} + ${o.usage.reasoning} reasoning`,
    `cache-read share of input: ${o.cacheReadShare === null ? '-' : `${(o.cacheReadShare * 100).toFixed(1)}%`}`,
  ];
  const c = o.compactionUsage;
  if (usageTotal(c) > 0) {
    lines.push(
      `compaction: input ${c.inputUncached} + ${c.cacheRead} cached, output ${c.output} + ${c.reasoning} reasoning`,
    );
  }
  lines.push(...subagentLines(o));
  return `${lines.join('\n')}\n`;
}

/** The subagents: a total, then one line per delegation call (call, step, child, how it ended, tokens). */
function subagentLines(o: SessionOverview): string[] {
  if (o.subagents.length === 0) return [];
  const ends = new Map<string, number>();
  for (const s of o.subagents) ends.set(s.ended, (ends.get(s.ended) ?? 0) + 1);
  const byEnd = [...ends].map(([ended, n]) => `${n} ${ended}`).join(', ');
  const rows = o.subagents.map((s) => [
    s.callId,
    `${s.turn}.${s.step}`,
    s.sessionId,
    s.ended,
    s.tokens === null ? '-' : String(s.tokens),
    s.inSeed ? 'in the seed (a child of the origin)' : '',
  ]);
  const table = [['call', 'step', 'subagent', 'ended', 'tokens', ''], ...rows];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  return [
    `subagents: ${o.subagents.length} (${byEnd}), ${o.subagentUsage.total} tokens; ` +
      `with the session's own: ${o.usage.total + o.subagentUsage.total} tokens`,
    ...table.map(
      (row) =>
        `  ${row
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd()}`,
    ),
  ];
}
