// What `dh run` / `dh attach` learn about a followed session's running subagents beyond its own log: a
// subagent's tool call that waits for approval. Polled with the state query only while the followed log
// has a delegation call open, through the `children` each state view lists (grandchildren included).
import type { SessionEvent } from '../../core/index.js';
import type { SessionStateView } from '../../shared/session-messages.js';

/** How often the running subagents are asked for their state. */
const POLL_EVERY_MS = 1_000;
/** How deep below the followed session subagents are asked (DH_SUBAGENT_DEPTH is at most 8). */
const MAX_DEPTH = 8;

export interface SubagentWatchOptions {
  /** The state query (answers or throws; a subagent not started yet, or gone, throws). */
  readonly state: (sessionId: string) => Promise<SessionStateView>;
  /** Prints one line for a person (the renderer's note, or stderr). */
  readonly note: (line: string) => void;
  readonly everyMs?: number;
}

export class SubagentWatch {
  readonly #sessionId: string;
  readonly #options: SubagentWatchOptions;
  /** Delegation calls of the followed log started and not yet ended: `T.S:callId`. */
  readonly #open = new Set<string>();
  /** Approvals already shown, `child callId`, until they stop waiting. */
  #waiting = new Map<string, { readonly child: string; readonly callId: string }>();
  #lastPoll = 0;

  constructor(sessionId: string, options: SubagentWatchOptions) {
    this.#sessionId = sessionId;
    this.#options = options;
  }

  /** Feeds one logged event of the followed session (every one, whichever turn it is in). */
  event(event: SessionEvent): void {
    const slot = (e: { turn: number; step: number; callId: string }) => `${e.turn}.${e.step}:${e.callId}`;
    if (event.type === 'tool/start' && event.child !== undefined) this.#open.add(slot(event));
    else if (event.type === 'tool/result') this.#open.delete(slot(event));
    else if (event.type === 'turn/end') this.#open.clear();
  }

  /** Some delegation call of the followed session is running. */
  get active(): boolean {
    return this.#open.size > 0;
  }

  /** Asks the running subagents for their state when one is running and it is time; never throws. */
  async poll(now = Date.now()): Promise<void> {
    if (!this.active) {
      this.#waiting.clear();
      return;
    }
    if (now - this.#lastPoll < (this.#options.everyMs ?? POLL_EVERY_MS)) return;
    this.#lastPoll = now;
    const found = new Map<string, { child: string; callId: string; shortId?: string; name: string; reason: string }>();
    const seen = new Set<string>([this.#sessionId]);
    let level = await this.#children(this.#sessionId);
    for (let depth = 1; depth <= MAX_DEPTH && level.length > 0; depth++) {
      const next: string[] = [];
      await Promise.all(
        level.map(async (child) => {
          if (seen.has(child)) return;
          seen.add(child);
          const view = await this.#state(child);
          if (view === null) return;
          const pending = view.pendingApproval;
          if (pending !== null) found.set(`${child} ${pending.callId}`, { child, ...pending });
          for (const c of view.children ?? []) next.push(c.sessionId);
        }),
      );
      level = next;
    }
    for (const [key, a] of found) {
      if (this.#waiting.has(key)) continue;
      // The short id, as the parent's own asks show it: what a person types (`dh approve` resolves it). A
      // workflow that predates short ids names the call by its id.
      const id = a.shortId ?? a.callId;
      this.#options.note(`⏸ subagent ${a.child}: ${a.name} needs approval [${id}]: ${a.reason}`);
      this.#options.note(`  dh approve ${a.child} ${id}   · --deny · --remember tool`);
    }
    for (const [key, a] of this.#waiting) {
      if (!found.has(key)) this.#options.note(`  subagent ${a.child}: ${a.callId} no longer waits for approval`);
    }
    this.#waiting = new Map([...found].map(([key, a]) => [key, { child: a.child, callId: a.callId }]));
  }

  async #children(sessionId: string): Promise<string[]> {
    const view = await this.#state(sessionId);
    return (view?.children ?? []).map((c) => c.sessionId);
  }

  async #state(sessionId: string): Promise<SessionStateView | null> {
    try {
      return await this.#options.state(sessionId);
    } catch {
      return null;
    }
  }
}
