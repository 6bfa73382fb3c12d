// A session: the validated, append-only event log plus caches derived from it (surface messages,
// header in force, structural state). It never edits an event; everything else is a projection.
import { parseEvent, toEvent, type EventDraft, type SessionEvent } from './events.js';
import type { Message } from './messages.js';
import type { RequestHeader } from './request-header.js';
import { applySurfaceEvent, deriveEventMessages } from './surface.js';
import { deepFreeze } from './deep-freeze.js';
import { findPairingProblem, LogState } from './log-state.js';
import { LogStructureError } from './errors.js';

/** How `new Session` and `appendEvents` admit complete events. */
export interface AdmitOptions {
  /**
   * Events that a store's reader validated in full (lossless JSON, schema at their seq, key, digest:
   * `parseEvent` and more) in the very read that returned them, and deep-froze at once, so they are still
   * exactly what passed. They are admitted without parsing them again; their place (seq) and the
   * structural rules (turns, steps, pairing, claims, replaces) are still checked. Every other event is
   * parsed in full. Never fill it from a cache: only with what the read itself just validated.
   */
  readonly validated?: ReadonlySet<unknown>;
}

export class Session {
  readonly sessionId: string;
  #events: SessionEvent[] = [];
  #state: LogState;
  /** Cached surface: shares deep-frozen messages; rebuilt only by a replace (in place, same fold). */
  #surface: Message[] = [];
  #header: RequestHeader | undefined;
  #replaceGeneration = 0;

  /**
   * Builds a session over existing events (e.g. read from a store), validating every one: in full, or for
   * the events a store's read has just validated (`options.validated`), their place and the structure.
   */
  constructor(sessionId: string, events: Iterable<unknown> = [], options?: AdmitOptions) {
    this.sessionId = sessionId;
    this.#state = new LogState(sessionId);
    const validated = options?.validated;
    for (const raw of events) this.#admit(this.#parse(raw, this.#events.length, validated));
  }

  get events(): readonly SessionEvent[] {
    return this.#events;
  }

  /** Next free seq. */
  get head(): number {
    return this.#events.length;
  }

  /** Structural state (open turn/step, queue, ...). Read-only by convention: do not mutate. */
  get state(): Readonly<LogState> {
    return this.#state;
  }

  /** Increments each time a surface replace rewrote earlier messages. */
  get replaceGeneration(): number {
    return this.#replaceGeneration;
  }

  /**
   * Appends drafts as one unit: each gets the next seq and its slot key, is checked for lossless
   * JSON, schema and structure, then frozen. If any is refused, none is appended.
   */
  append(...drafts: EventDraft[]): readonly SessionEvent[] {
    const start = this.#events.length;
    try {
      return drafts.map((draft, i) => this.#admit(parseEvent(this.sessionId, toEvent(draft, start + i), start + i)));
    } catch (error) {
      if (this.#events.length > start) this.#rollback(start);
      throw error;
    }
  }

  /** Appends complete events (seq and key given), e.g. the winner's events returned by a store. */
  appendEvents(events: readonly unknown[], options?: AdmitOptions): readonly SessionEvent[] {
    const start = this.#events.length;
    const validated = options?.validated;
    try {
      return events.map((raw, i) => this.#admit(this.#parse(raw, start + i, validated)));
    } catch (error) {
      if (this.#events.length > start) this.#rollback(start);
      throw error;
    }
  }

  /** The conversation surface: a fresh array over shared deep-frozen messages. */
  deriveMessages(): Message[] {
    return this.#surface.slice();
  }

  /** The header in force (latest `request/header` snapshot). */
  requestHeader(): RequestHeader | undefined {
    return this.#header;
  }

  /**
   * The schema-valid event `raw` is at `seq`: parsed in full, unless the store's reader has just validated
   * this very (frozen) object at this very seq (`AdmitOptions.validated`). Anything else, including an
   * event of that set standing at another seq, is parsed and so reported the usual way.
   */
  #parse(raw: unknown, seq: number, validated: ReadonlySet<unknown> | undefined): SessionEvent {
    if (validated?.has(raw) && Object.isFrozen(raw) && (raw as SessionEvent).seq === seq) return raw as SessionEvent;
    return parseEvent(this.sessionId, raw, seq);
  }

  #admit(event: SessionEvent): SessionEvent {
    // Every event admitted is parseEvent's output (a fresh graph: it shares no object with what the caller
    // or the store handed in) or a row the store's reader already froze: freezing it in place keeps the
    // session's copy its own, with no second copy.
    const frozen = deepFreeze(event);
    if (frozen.type === 'surface/replace') this.#checkReplace(frozen);
    const added = frozen.type === 'surface/replace' ? 0 : deriveEventMessages(frozen).length;
    this.#state.admit(frozen, (length) =>
      frozen.type === 'surface/replace'
        ? length - (frozen.range.end - frozen.range.start + 1) + frozen.messages.length
        : length + added,
    );
    this.#events.push(frozen);
    if (applySurfaceEvent(this.#surface, frozen)) this.#replaceGeneration++;
    if (frozen.type === 'request/header') this.#header = frozen.header;
    return frozen;
  }

  #checkReplace(event: Extract<SessionEvent, { type: 'surface/replace' }>): void {
    if (event.range.end >= this.#surface.length) return; // LogState reports the range problem.
    const candidate = this.#surface.slice();
    applySurfaceEvent(candidate, event);
    const problem = findPairingProblem(candidate, false);
    if (problem)
      throw new LogStructureError(this.sessionId, event.seq, `surface/replace: the result is invalid: ${problem}`);
  }

  /** Error path only: rebuild every cache from the events that stay. */
  #rollback(length: number): void {
    const kept = this.#events.slice(0, length);
    this.#events = [];
    this.#state = new LogState(this.sessionId);
    this.#surface = [];
    this.#header = undefined;
    this.#replaceGeneration = 0;
    for (const event of kept) this.#admit(event);
  }
}
