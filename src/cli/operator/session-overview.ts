// `dh show <session>`: what a log adds up to — tokens by kind, the cache-read share, turns, steps,
// requests, how turns ended, and whether a turn is still open.
import { addUsage, cacheReadShare, emptyUsage, usageTotal, type SessionEvent, type Usage } from '../../core/index.js';

export interface SessionOverview {
  readonly sessionId: string;
  readonly events: number;
  readonly firstAt: number | null;
  readonly lastAt: number | null;
  readonly parent: { readonly sessionId: string; readonly seedLength: number } | null;
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
  return {
    sessionId,
    events: events.length,
    firstAt: events[0]?.at ?? null,
    lastAt: events.at(-1)?.at ?? null,
    parent,
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
  };
}

export function renderOverview(o: SessionOverview, workflowStatus: string | null): string {
  const time = (at: number | null) => (at === null ? '-' : new Date(at).toISOString());
  const ends = Object.entries(o.turnEnds)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
  const lines = [
    `session ${o.sessionId}${o.parent ? ` (fork of ${o.parent.sessionId}, seed seqs 0..${o.parent.seedLength - 1})` : ''}`,
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
  return `${lines.join('\n')}\n`;
}
