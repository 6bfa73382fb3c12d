// The side of `dh chat` that talks to the session: follows its log and live deltas into a ChatModel,
// sends the three kinds of message, interrupts, decides approvals, and runs the slash commands. The Ink
// app (chat-app.ts) only draws the model and forwards keys here.
import { randomUUID } from 'node:crypto';
import { auditSession } from '../../audit/audit-session.js';
import type { DeltaChannel } from '../../streaming/delta-channel.js';
import { SessionFollower } from '../../streaming/session-follower.js';
import { contentLimitProblem, messageStatusQuery } from '../../shared/session-messages.js';
import type { CliContext } from '../cli-context.js';
import { warnWithoutWorker } from '../worker-warning.js';
import { forkSession } from '../../operations/fork-session.js';
import { attachmentReader, configuredProfile } from '../operator/operator-actions.js';
import { renderAuditReport } from '../operator/render-audit.js';
import { renderOverview, sessionOverview } from '../../operations/session-overview.js';
import { CHAT_SOURCE, ChatModel } from './chat-model.js';
import type { MessageFate, SlashCommand } from './chat-input.js';

const POLL_MS = 50;
/** How long a sent message may go unlogged before the chat asks whether the session refused it. */
const REFUSAL_CHECK_MS = 2_000;
/** That question's deadline: without a worker a query waits for one, and the chat must not hang on it. */
const REFUSAL_QUERY_MS = 3_000;

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export const CHAT_HELP = [
  'Enter: steer the running turn (its next step) · while idle, start a turn',
  'Tab: queue as a followup for after this turn · Ctrl-J: new line · Esc: interrupt · Ctrl-D: detach',
  '/inject <text>: context that does not wake the agent · /compact · /fork · /show · /audit · /help',
  'y / n with an empty line: approve or deny the call waiting for approval · //text sends "/text"',
  'a with an empty line: approve it, and every later call of its tool in this session without asking',
].join('\n');

export class ChatController {
  readonly model = new ChatModel();
  readonly #listeners = new Set<() => void>();
  readonly #follower: SessionFollower;
  #stopped = false;
  #loop: Promise<void> | null = null;
  /** Messages, interrupts and decisions go out one at a time, in the order they were typed. */
  #outbox: Promise<void> = Promise.resolve();
  /** Ends the look for a worker at stop; `#missingWorker` while a warning stands (until one polls). */
  readonly #watch = new AbortController();
  /** The looks still running: awaited at stop, before the caller closes the connection they use. */
  readonly #watching = new Set<Promise<void>>();
  #missingWorker = false;

  constructor(
    private readonly ctx: CliContext,
    channel: DeltaChannel,
    readonly sessionId: string,
  ) {
    this.#follower = new SessionFollower(ctx.store, channel, sessionId, { fromSeq: 0 });
  }

  /** Calls `listener` whenever the model changed; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  start(): void {
    this.#loop ??= this.#run();
    this.#checkWorker();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#watch.abort();
    await Promise.all([this.#loop, ...this.#watching]);
  }

  /**
   * Sends `content` with `fate`. It shows as being sent at once, in its queue once the session logs it, and
   * in the transcript once a step claims it; a send that fails says so with its text.
   */
  async send(fate: MessageFate, content: string): Promise<void> {
    // The session refuses an oversized signal without a word back: say it here rather than wait forever.
    const tooLarge = contentLimitProblem(content);
    if (tooLarge !== null) {
      this.model.note(`✗ not sent (${fate}): ${tooLarge}`, 'warn');
      this.#changed();
      return;
    }
    const messageId = `chat-${randomUUID()}`;
    const options = { messageId, source: CHAT_SOURCE };
    this.model.send(messageId, fate, content);
    this.#changed();
    await this.#report(async () => {
      try {
        await (fate === 'followup'
          ? this.ctx.sessions.followup(this.sessionId, content, { ...options, start: true })
          : fate === 'steer'
            ? this.ctx.sessions.steer(this.sessionId, content, options)
            : this.ctx.sessions.inject(this.sessionId, content, options));
      } catch (error) {
        this.model.unsent(messageId, (error as Error).message);
        return;
      }
      this.#checkRefused(messageId);
    });
    // The first message may have started the workflow: now there is a queue to look at.
    this.#checkWorker();
  }

  /**
   * A signal the session refuses (it is closing) gets no answer: when the message is still being sent after a
   * moment, ask the workflow (messageStatus), and say so instead of showing it as being sent forever.
   */
  #checkRefused(messageId: string): void {
    const check = (async () => {
      await abortableSleep(REFUSAL_CHECK_MS, this.#watch.signal);
      if (this.#watch.signal.aborted || !this.model.sending.some((m) => m.messageId === messageId)) return;
      const { client } = this.ctx;
      const status = await client
        .withDeadline(Date.now() + REFUSAL_QUERY_MS, () =>
          this.ctx.sessions.handle(this.sessionId).query(messageStatusQuery, messageId),
        )
        .catch(() => null);
      if (status?.state === 'refused') {
        this.model.unsent(messageId, `the session refused it: ${status.reason ?? 'no reason given'}`);
        this.#changed();
      }
    })();
    this.#watching.add(check);
    void check.then(() => this.#watching.delete(check));
  }

  async interrupt(): Promise<void> {
    this.model.note('⏹ interrupting the turn… a message sent before it ends will start the next turn', 'warn');
    this.#changed();
    await this.#report(() => this.ctx.sessions.interrupt(this.sessionId, 'Esc in dh chat'));
  }

  /** `remember`: also decide later calls of this session alike (see ApprovePayload.remember). */
  async decide(callId: string, decision: 'approve' | 'deny', remember?: 'tool' | 'call'): Promise<void> {
    await this.#report(() =>
      this.ctx.sessions.approve(this.sessionId, {
        callId,
        decision,
        by: CHAT_SOURCE,
        ...(remember !== undefined ? { remember } : {}),
      }),
    );
  }

  async command(command: SlashCommand): Promise<void> {
    switch (command.name) {
      case 'inject':
        return this.send('inject', command.text);
      case 'help':
        this.model.note(CHAT_HELP);
        break;
      case 'compact':
        await this.#report(() => this.ctx.sessions.compact(this.sessionId));
        this.model.note('compaction requested');
        break;
      case 'fork': {
        if (this.model.openTurn !== null) {
          this.model.note('/fork: a turn is running; fork once it has ended (or interrupt it first)', 'warn');
          break;
        }
        const head = await this.ctx.store.head(this.sessionId);
        const forked = await this.#attempt(() =>
          forkSession(this.ctx.store, this.ctx.sessions, this.sessionId, { atSeq: head }),
        );
        if (forked !== undefined) this.model.note(`forked at seq ${head} as ${forked}: dh chat ${forked}`);
        break;
      }
      case 'show': {
        const events = await this.ctx.store.read(this.sessionId);
        this.model.note(renderOverview(sessionOverview(this.sessionId, events), null).trimEnd());
        break;
      }
      case 'audit': {
        const profile = configuredProfile(this.ctx.config);
        const report = await this.#attempt(() =>
          auditSession({
            store: this.ctx.store,
            sessionId: this.sessionId,
            client: this.ctx.client,
            readAttachment: attachmentReader(this.ctx.config),
            ...(profile !== undefined ? { profile } : {}),
            ...(this.ctx.config.logKey !== undefined ? { logKey: this.ctx.config.logKey } : {}),
          }),
        );
        if (report !== undefined) this.model.note(renderAuditReport(report).trimEnd(), report.ok ? 'note' : 'warn');
        break;
      }
      case 'unknown':
        this.model.note(`unknown command ${command.raw.split(/\s/)[0]}: /help lists them`, 'warn');
        break;
    }
    this.#changed();
  }

  /** Warns on screen when no worker polls the session's queue, and says so again once one does. */
  #checkWorker(): void {
    if (this.#missingWorker || this.#watch.signal.aborted) return;
    const watching = warnWithoutWorker(this.ctx, this.sessionId, {
      untilWorker: this.#watch.signal,
      note: (line, polled) => {
        this.#missingWorker = !polled;
        this.model.note(polled ? line : `⚠ ${line}`, 'warn');
        this.#changed();
      },
    });
    this.#watching.add(watching);
    void watching.then(() => this.#watching.delete(watching));
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const ops = await this.#follower.poll().catch((error: unknown) => {
        // A session with no log yet (nothing sent) is not an error: its first message creates it.
        if ((error as { code?: unknown }).code !== 'SESSION_NOT_FOUND') {
          this.model.note(`reading the session failed: ${(error as Error).message}`, 'warn');
        }
        return [];
      });
      for (const op of ops) this.model.apply(op);
      if (ops.length > 0) this.#changed();
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Runs `call` after everything sent before it; a failure becomes a line on screen, never a crash. */
  #report(call: () => Promise<unknown>): Promise<void> {
    this.#outbox = this.#outbox.then(async () => {
      await this.#attempt(call);
      this.#changed();
    });
    return this.#outbox;
  }

  async #attempt<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      this.model.note(`✗ ${(error as Error).message}`, 'warn');
      return undefined;
    }
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}
