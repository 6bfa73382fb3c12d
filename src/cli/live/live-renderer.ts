// Renders a followed session for a person: answer text on stdout as it streams, tool calls, their
// progress, results, approvals (by short id), policy denials and remembered rules, subagents starting and
// ending, and steering as compact one-line notes on stderr, and a spinner while waiting (TTY only).
import { approvalShortId, usageTotal, type EventOf, type SessionEvent, type UserContent } from '../../core/index.js';
import type { FollowOp } from '../../streaming/session-follower.js';
import { limiterWaitLabel } from '../../streaming/limiter-wait-label.js';

export interface LiveRendererOptions {
  readonly sessionId: string;
  readonly out?: NodeJS.WritableStream;
  readonly err?: NodeJS.WritableStream;
  /** Spinner and colours on stderr (default: stderr is a TTY and NO_COLOR is unset). */
  readonly tty?: boolean;
  /** User messages not to echo (a `run`'s own task). */
  readonly hideMessageIds?: ReadonlySet<string>;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SUMMARY_CHARS = 100;

export class LiveRenderer {
  readonly #sessionId: string;
  readonly #out: NodeJS.WritableStream;
  readonly #err: NodeJS.WritableStream;
  readonly #tty: boolean;
  readonly #hide: ReadonlySet<string>;
  #outAtLineStart = true;
  /** stdout is a terminal, shared with stderr's notes: a note mid-answer ends the answer's line first. */
  readonly #outOnScreen: boolean;
  #spinnerLabel: string | null = null;
  #spinnerTimer: NodeJS.Timeout | null = null;
  #frame = 0;
  /** The tool each asked call runs, so its decision line names it as the ask did. */
  readonly #asked = new Map<string, string>();
  #drawn = false;
  /** The limiter wait last noted (step and reason): a wait is noted once, then only relabels the spinner. */
  #limiterNoted: string | null = null;

  constructor(options: LiveRendererOptions) {
    this.#sessionId = options.sessionId;
    this.#out = options.out ?? process.stdout;
    this.#outOnScreen = (this.#out as { isTTY?: boolean }).isTTY === true;
    this.#err = options.err ?? process.stderr;
    this.#tty = options.tty ?? (process.stderr.isTTY === true && process.env.NO_COLOR === undefined);
    this.#hide = options.hideMessageIds ?? new Set();
  }

  get tty(): boolean {
    return this.#tty;
  }

  /** Shows (or relabels) the spinner while nothing streams; a no-op without a TTY. */
  waiting(label: string): void {
    this.#spinnerLabel = label;
    if (!this.#tty || !this.#outAtLineStart) return;
    if (this.#spinnerTimer === null) {
      this.#spinnerTimer = setInterval(() => this.#draw(), 80);
      this.#spinnerTimer.unref();
    }
    this.#draw();
  }

  /**
   * A one-line note on stderr. On a terminal it starts on a line of its own; with stdout piped (a file, another
   * program) stdout is left as is, so it holds the answer exactly — a note arriving mid-stream (a worker that
   * appeared, an interrupt) never splits it.
   */
  note(line: string): void {
    this.#clearSpinner();
    if (this.#outOnScreen) this.#endOutLine();
    this.#err.write(`${this.#tty ? `\x1b[2m${line}\x1b[0m` : line}\n`);
    this.#resumeSpinner();
  }

  op(op: FollowOp): void {
    // A retried attempt's first output: what the failed attempt streamed is void.
    if ('restart' in op && op.restart === true)
      this.note(`↻ the model call was retried (attempt ${op.attempt}); its answer starts over`);
    switch (op.type) {
      case 'text':
        if (op.text === '') return;
        this.#stopSpinner();
        this.#write(op.text);
        return;
      case 'reasoning':
        this.waiting('reasoning…');
        return;
      case 'tool-delta':
        this.waiting(`preparing ${op.name ?? 'a tool call'}…`);
        return;
      case 'tool-progress': {
        // One line per change (the follower passes changes only), the same with or without a TTY.
        const count = op.total !== null ? `${amount(op.progress)}/${amount(op.total)}` : amount(op.progress);
        this.note(`… ${op.name} ${count}${op.message !== null ? ` ${clip(op.message)}` : ''}`);
        this.waiting(`running ${op.name} ${count}…`);
        return;
      }
      case 'limiter-wait': {
        // One line when a step starts waiting (or waits for another reason): logs without a TTY see it too.
        const label = limiterWaitLabel(op);
        const key = `${op.turn}.${op.step}:${op.reason}`;
        if (key !== this.#limiterNoted) {
          this.#limiterNoted = key;
          this.note(`⏳ ${label}`);
        }
        this.waiting(label);
        return;
      }
      case 'answer':
        this.#answer(op.event, op.rest, op.replaced && op.streamed);
        return;
      case 'event':
        this.#event(op.event);
        return;
    }
  }

  /** Ends the output cleanly (newline after streamed text, spinner gone). */
  close(): void {
    this.#stopSpinner();
    this.#endOutLine();
  }

  #answer(event: EventOf<'assistant/message'>, rest: string, replaced: boolean): void {
    this.#stopSpinner();
    if (replaced) this.note('↻ the logged answer differs from what was streamed; the logged one:');
    this.#write(rest);
    this.#endOutLine();
    if (event.interrupted) this.note('⏹ interrupted: the partial answer above is logged as interrupted');
    for (const call of event.toolCalls) this.note(`→ ${call.name} ${clip(call.arguments)}`);
    this.waiting(event.toolCalls.length > 0 ? 'running tools…' : 'waiting…');
  }

  #event(event: SessionEvent): void {
    switch (event.type) {
      case 'step/start':
        this.waiting('thinking…');
        return;
      case 'user/message':
        if (this.#hide.has(event.messageId)) return;
        this.note(
          `» ${event.origin}${event.source !== undefined ? ` (${event.source})` : ''}: ${clip(text(event.content))}`,
        );
        return;
      case 'tool/start':
        if (event.child !== undefined) {
          this.note(`⇢ subagent ${event.child} started (${event.callId}); watch it: dh attach ${event.child}`);
          this.waiting('subagents running…');
          return;
        }
        this.waiting(`running ${event.name}…`);
        return;
      case 'tool/result':
        if (event.child) {
          const c = event.child;
          // The output opens with a head line the note already says; the answer follows a blank line.
          const answer = event.output.split('\n\n').slice(1).join(' ');
          this.note(
            `⇠ subagent ${c.sessionId} (${event.callId}) ended ${c.reason}, ${usageTotal(c.usage)} tokens` +
              (answer.trim() !== '' ? `: ${clip(answer)}` : ''),
          );
        } else {
          this.note(`← ${event.name} ${event.status}: ${clip(event.output)} (${event.output.length} chars)`);
        }
        this.waiting('waiting…');
        return;
      case 'approval/request': {
        // The short id is what a person types; `dh approve` resolves it against the one waiting call.
        const shortId = approvalShortId(event.callId);
        this.#asked.set(event.callId, event.name);
        this.note(`⏸ ${event.name} needs approval [${shortId}]: ${clip(event.reason)}`);
        this.note(`  dh approve ${this.#sessionId} ${shortId}   · --deny · --remember tool`);
        this.waiting('waiting for approval…');
        return;
      }
      case 'policy/verdict':
        // Allowed calls would drown the output; an ask is followed by its approval/request.
        if (event.outcome === 'deny') this.note(policyDenyNote(event));
        return;
      case 'policy/rule':
        this.note(rememberedRuleNote(event));
        return;
      case 'approval/decision': {
        const name = this.#asked.get(event.callId);
        this.#asked.delete(event.callId);
        const call = `${name !== undefined ? `${name} ` : ''}[${approvalShortId(event.callId)}]`;
        this.note(
          `${event.decision === 'approve' ? '✓ approved' : event.decision === 'deny' ? '✗ denied' : '⏱ no decision in time:'} ` +
            `${call}${event.by !== undefined ? ` by ${event.by}` : ''}${event.reason !== undefined ? ` (${clip(event.reason)})` : ''}`,
        );
        return;
      }
      case 'turn/end':
        this.#stopSpinner();
        if (event.reason !== 'completed') {
          this.note(
            `■ turn ${event.turn} ended: ${event.reason}${event.error ? ` — ${event.error.code}: ${clip(event.error.message)}` : ''}`,
          );
        }
        return;
      case 'compact/start':
        this.waiting('compacting the context…');
        return;
      default:
        return;
    }
  }

  #write(chunk: string): void {
    if (chunk === '') return;
    this.#out.write(chunk);
    this.#outAtLineStart = chunk.endsWith('\n');
  }

  #endOutLine(): void {
    if (!this.#outAtLineStart) {
      this.#out.write('\n');
      this.#outAtLineStart = true;
    }
  }

  #draw(): void {
    if (this.#spinnerLabel === null) return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.#err.write(`\r\x1b[2K\x1b[36m${FRAMES[this.#frame]}\x1b[0m ${this.#spinnerLabel}`);
    this.#drawn = true;
  }

  #clearSpinner(): void {
    if (this.#drawn) {
      this.#err.write('\r\x1b[2K');
      this.#drawn = false;
    }
  }

  #resumeSpinner(): void {
    if (this.#spinnerTimer !== null) this.#draw();
  }

  #stopSpinner(): void {
    if (this.#spinnerTimer !== null) {
      clearInterval(this.#spinnerTimer);
      this.#spinnerTimer = null;
    }
    this.#clearSpinner();
  }
}

/** The text of a user message's content (attachments named, not shown). */
export function text(content: UserContent): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join(' ');
}

/** A call the tool policy denied, and what decided it: `✗ policy denied shell (rule no-rm): why`. */
export function policyDenyNote(event: EventOf<'policy/verdict'>): string {
  const by =
    event.by === 'evaluator'
      ? `evaluator ${event.evaluator ?? '?'}`
      : event.by === 'default'
        ? 'default'
        : `${event.by === 'session-rule' ? 'session rule' : 'rule'} ${event.rule ?? '?'}`;
  return `✗ policy denied ${event.name} (${by})${event.reason !== undefined ? `: ${clip(event.reason)}` : ''}`;
}

/** A decision remembered by "approve and remember": its outcome and tool, and whether it is for these arguments only. */
export function rememberedRuleNote(event: EventOf<'policy/rule'>): string {
  const { rule } = event;
  return (
    `remembered for this session: ${rule.outcome} ${[rule.tool].flat().join(', ')}` +
    `${rule.when !== undefined ? ' (these arguments)' : ''}`
  );
}

/** A progress amount: whole numbers as they are, fractions to at most two decimals. */
function amount(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Math.round(value * 100) / 100);
}

/** First line, whitespace collapsed, at most SUMMARY_CHARS characters. */
export function clip(value: string): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length > SUMMARY_CHARS ? `${flat.slice(0, SUMMARY_CHARS - 1)}…` : flat;
}
