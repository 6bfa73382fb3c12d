// What `dh chat` shows, folded from the session follower's ops: finished transcript lines (printed once),
// the step streaming now and the lines that came while it streams, whether a turn runs, what waits in each
// inbox queue (and what this chat is still sending), calls awaiting approval (with their short ids), and the
// tool policy's denials and remembered rules as notes. Everything but the lines being sent comes from the
// log (and live deltas), so a reattached chat shows the same state.
import { approvalShortId, type EventOf, type SessionEvent } from '../../core/index.js';
import { usageLabel } from '../../streaming/usage-label.js';
import type { FollowOp } from '../../streaming/session-follower.js';
import { clip, policyDenyNote, rememberedRuleNote, text } from '../live/live-renderer.js';
import { limiterWaitLabel } from '../../streaming/limiter-wait-label.js';
import type { MessageFate } from './chat-input.js';

/** The source `dh chat` sends its messages with (recorded in the log). */
export const CHAT_SOURCE = 'chat';

export type LineKind = 'user' | 'assistant' | 'tool' | 'note' | 'warn';

export interface ChatLine {
  readonly id: number;
  readonly kind: LineKind;
  readonly text: string;
}

/** A message accepted by the session and not yet claimed by a step (or logged, for context). */
export interface Waiting {
  readonly messageId: string;
  /** `step`: enters the running turn's next step; `turn`: starts the next turn; `context`: rides along. */
  readonly queue: 'step' | 'turn' | 'context';
  readonly text: string;
}

/** A message this chat sent that the log does not show yet (shown until its `inbox/enqueue` replaces it). */
export interface Sending {
  readonly messageId: string;
  readonly fate: MessageFate;
  readonly text: string;
}

export interface PendingApproval {
  readonly callId: string;
  /** What the screen shows and `dh approve` takes in place of the call id. */
  readonly shortId: string;
  readonly name: string;
  readonly args: string;
  readonly reason: string;
}

export class ChatModel {
  readonly #lines: ChatLine[] = [];
  /**
   * Lines that came while an answer streams: drawn below the streaming text and printed after it once it
   * is logged, so nothing lands in the transcript above text already on screen (the interrupt's note).
   */
  #trailing: ChatLine[] = [];
  #nextId = 0;
  #live = '';
  #openTurn: number | null = null;
  #lastEnded = 0;
  #activity = '';
  /** The streaming step's token counts (and cost) as the provider reported them; cleared with its answer. */
  #liveUsage = '';
  readonly #waiting = new Map<string, Waiting>();
  readonly #sending = new Map<string, Sending>();
  /** Ids the log has shown: a send that reports back after its message was logged adds no line. */
  readonly #logged = new Set<string>();
  /** Messages moved to the next turn by an interrupt, until their `user/message` says so. */
  readonly #downgraded = new Set<string>();
  readonly #approvals = new Map<string, PendingApproval>();
  readonly #calls = new Map<string, { name: string; args: string }>();

  /** Finished lines from `from` on (the app prints each once). */
  linesFrom(from: number): readonly ChatLine[] {
    return this.#lines.slice(from);
  }

  get lineCount(): number {
    return this.#lines.length;
  }

  get live(): string {
    return this.#live;
  }

  /** Lines that came while the answer streams, drawn below it (see `#trailing`). */
  get trailing(): readonly ChatLine[] {
    return this.#trailing;
  }

  /** The turn running now, or null when the session is idle. */
  get openTurn(): number | null {
    return this.#openTurn;
  }

  /** What the running turn is doing ("thinking…", "running sleep…"), empty when idle. */
  get activity(): string {
    return this.#activity !== '' && this.#liveUsage !== '' ? `${this.#activity} · ${this.#liveUsage}` : this.#activity;
  }

  /** By queue (next step, next turn, context), each in arrival order. */
  get waiting(): readonly Waiting[] {
    const order = { step: 0, turn: 1, context: 2 } as const;
    return [...this.#waiting.values()].sort((a, b) => order[a.queue] - order[b.queue]);
  }

  /** Messages this chat sent that are not logged yet, in the order they were sent. */
  get sending(): readonly Sending[] {
    return [...this.#sending.values()];
  }

  get approvals(): readonly PendingApproval[] {
    return [...this.#approvals.values()];
  }

  /** A line from the chat itself (a command's result, an error). */
  note(line: string, kind: LineKind = 'note'): void {
    for (const part of line.split('\n')) this.#push(kind, part);
  }

  /** The chat is sending `content` as `messageId`: shown as being sent until the log has it. */
  send(messageId: string, fate: MessageFate, content: string): void {
    if (!this.#logged.has(messageId)) this.#sending.set(messageId, { messageId, fate, text: clip(content) });
  }

  /** Sending `messageId` failed: its line goes, and the transcript says what was not sent and why. */
  unsent(messageId: string, reason: string): void {
    const sending = this.#sending.get(messageId);
    this.#sending.delete(messageId);
    if (sending !== undefined) this.#push('warn', `✗ not sent (${sending.fate}): "${sending.text}": ${reason}`);
  }

  apply(op: FollowOp): void {
    if ('restart' in op && op.restart === true) {
      // A retried attempt's first output: what the failed attempt streamed is void.
      this.#liveUsage = '';
      this.#endLive();
      this.#push('note', `↻ the model call was retried (attempt ${op.attempt}); its answer starts over`);
    }
    // Live output can be read before the log's turn/start: it alone says a turn runs (Enter must steer it).
    if (op.type !== 'event' && op.type !== 'answer' && op.turn > this.#lastEnded) this.#openTurn = op.turn;
    switch (op.type) {
      case 'text':
        this.#live += op.text;
        this.#activity = 'answering…';
        return;
      case 'reasoning':
        this.#activity = 'reasoning…';
        return;
      case 'tool-delta':
        this.#activity = `preparing ${op.name ?? 'a tool call'}…`;
        return;
      case 'tool-progress':
        this.#activity = `running ${op.name} ${op.progress}${op.total !== null ? `/${op.total}` : ''}…`;
        return;
      case 'limiter-wait':
        this.#activity = limiterWaitLabel(op);
        return;
      case 'usage':
        this.#liveUsage = usageLabel(op.usage, op.cost);
        return;
      case 'answer': {
        const content = op.event.content ?? '';
        const trailing = this.#trailing;
        this.#trailing = [];
        this.#live = '';
        this.#liveUsage = '';
        if (content !== '') this.#push('assistant', content);
        // What came while it streamed (the interrupt's note, a message moved to the next turn) follows it.
        this.#lines.push(...trailing);
        if (op.event.interrupted)
          this.#push('warn', '⏹ interrupted: the partial answer above is logged as interrupted');
        for (const call of op.event.toolCalls) {
          this.#calls.set(call.id, { name: call.name, args: call.arguments });
          this.#push('tool', `→ ${call.name} ${clip(call.arguments)}`);
        }
        this.#activity = op.event.toolCalls.length > 0 ? 'running tools…' : '';
        return;
      }
      case 'event':
        this.#event(op.event);
        return;
    }
  }

  #event(event: SessionEvent): void {
    switch (event.type) {
      case 'inbox/enqueue': {
        this.#logged.add(event.messageId);
        this.#sending.delete(event.messageId);
        const queue = !event.wakeup ? 'context' : event.target === 'next-step' ? 'step' : 'turn';
        this.#waiting.set(event.messageId, { messageId: event.messageId, queue, text: clip(text(event.content)) });
        return;
      }
      case 'inbox/downgrade': {
        const waiting = this.#waiting.get(event.messageId);
        if (waiting) this.#waiting.set(event.messageId, { ...waiting, queue: 'turn' });
        this.#downgraded.add(event.messageId);
        this.#push(
          'warn',
          `↓ "${waiting?.text ?? event.messageId}" came as the turn was being interrupted: it will start the next turn instead`,
        );
        return;
      }
      case 'inbox/claim':
      case 'inbox/discard':
        for (const id of event.messageIds) {
          this.#waiting.delete(id);
          this.#sending.delete(id);
          this.#logged.add(id);
        }
        if (event.type === 'inbox/discard')
          this.#push('warn', `✗ dropped ${event.messageIds.join(', ')}: ${event.reason}`);
        return;
      case 'user/message': {
        this.#waiting.delete(event.messageId);
        this.#sending.delete(event.messageId);
        this.#logged.add(event.messageId);
        const moved = this.#downgraded.delete(event.messageId);
        // Whatever a `dh chat` sent (this one or an earlier one on the session) is "you"; others by their source.
        const who = event.source === CHAT_SOURCE ? 'you' : (event.source ?? 'someone');
        this.#push('user', `› ${who} (${event.origin}, ${enteredAt(event, moved)}): ${text(event.content)}`);
        return;
      }
      case 'turn/start':
        this.#openTurn = event.turn;
        this.#activity = 'thinking…';
        return;
      case 'step/start':
        this.#activity = 'thinking…';
        return;
      case 'tool/start':
        this.#activity = event.child !== undefined ? 'subagents running…' : `running ${event.name}…`;
        return;
      case 'tool/result':
        this.#approvals.delete(event.callId);
        this.#push('tool', `← ${event.name} ${event.status}: ${clip(event.output)}`);
        return;
      case 'approval/request': {
        const call = this.#calls.get(event.callId);
        this.#approvals.set(event.callId, {
          callId: event.callId,
          shortId: approvalShortId(event.callId),
          name: event.name,
          args: call?.args ?? '',
          reason: event.reason,
        });
        this.#activity = 'waiting for approval…';
        return;
      }
      case 'approval/decision': {
        this.#approvals.delete(event.callId);
        // Named as the ask named it: the tool and the short id the person typed or clicked.
        const name = this.#calls.get(event.callId)?.name;
        const verb =
          event.decision === 'approve' ? '✓ approved' : event.decision === 'deny' ? '✗ denied' : '⏱ no decision:';
        this.#push('note', `${verb} ${name !== undefined ? `${name} ` : ''}[${approvalShortId(event.callId)}]`);
        return;
      }
      case 'policy/verdict':
        // Allowed calls would drown the transcript; an ask shows as the pending approval.
        if (event.outcome === 'deny') this.#push('warn', policyDenyNote(event));
        return;
      case 'policy/rule':
        this.#push('note', rememberedRuleNote(event));
        return;
      case 'compact/start':
        this.#activity = 'compacting the context…';
        return;
      case 'turn/end':
        this.#lastEnded = Math.max(this.#lastEnded, event.turn);
        if (this.#openTurn !== null && this.#openTurn <= event.turn) this.#openTurn = null;
        this.#activity = '';
        this.#endLive();
        this.#push(
          event.reason === 'completed' ? 'note' : 'warn',
          `■ turn ${event.turn} ${event.reason}${event.error ? ` — ${event.error.code}: ${clip(event.error.message)}` : ''}`,
        );
        return;
      default:
        return;
    }
  }

  /** The streaming text is void (a retry) or over without an answer (the turn ended): what trailed it is printed. */
  #endLive(): void {
    this.#live = '';
    this.#lines.push(...this.#trailing);
    this.#trailing = [];
  }

  #push(kind: LineKind, line: string): void {
    const entry = { id: this.#nextId++, kind, text: line };
    if (this.#live !== '') this.#trailing.push(entry);
    else this.#lines.push(entry);
  }
}

/**
 * Where a claimed message entered, as its `user/message` logs it: a turn's first step is the turn
 * ("turn 3": a followup that started it), a later step is that step of the running turn ("entered step 2").
 */
function enteredAt(event: EventOf<'user/message'>, moved: boolean): string {
  const where = event.step === 1 ? `turn ${event.turn}` : `entered step ${event.step}`;
  return moved ? `moved to the next turn, ${where}` : where;
}
