// The support desk's service: one session per ticket with the `support` agent, a triage session per ticket with
// `triage`, a human's note steered into a running turn, and waits for the turn that answers a message. It only
// steers sessions (durable-harness/client); the worker that runs them is elsewhere (`npm run worker`).
import type { SessionClient, TurnEnd } from 'durable-harness/client';

export interface WaitOptions {
  /** How long to wait for the answering turn to end (default 5 minutes). */
  readonly timeoutMs?: number;
}

export class SupportDesk {
  constructor(private readonly sessions: SessionClient) {}

  /** The session of a ticket (the same ticket always gets the same session). */
  static sessionOf(ticketId: string): string {
    return `ticket-${ticketId}`;
  }

  /**
   * Opens the ticket's session with the `support` agent (or attaches to it), sends the customer's message and
   * resolves once the turn that answers it has ended (`{ turn, reason }`: `completed` when it answered).
   */
  async answer(ticketId: string, message: string, options: WaitOptions = {}): Promise<TurnEnd> {
    const sessionId = SupportDesk.sessionOf(ticketId);
    await this.sessions.open(sessionId, { agent: 'support' });
    const receipt = await this.sessions.send(sessionId, {
      content: message,
      target: 'next-turn',
      wakeup: true,
      source: 'support-desk',
    });
    return receipt.turnEnded({ timeoutMs: options.timeoutMs ?? 300_000 });
  }

  /** A colleague's note for the turn that runs now: the model reads it at its next step. */
  note(ticketId: string, text: string): Promise<void> {
    return this.sessions.steer(SupportDesk.sessionOf(ticketId), text, { source: 'colleague' });
  }

  /** Sorts a new ticket in a session of its own with the `triage` agent, started by this first message. */
  async triage(ticketId: string, text: string, options: WaitOptions = {}): Promise<TurnEnd> {
    const sessionId = `triage-${ticketId}`;
    const messageId = `${sessionId}-ticket`;
    await this.sessions.followup(sessionId, text, { start: true, agent: 'triage', messageId, source: 'support-desk' });
    return this.sessions.turnEnded(sessionId, messageId, { timeoutMs: options.timeoutMs ?? 300_000 });
  }

  /** The ticket is solved: its session finishes what it was asked, then closes (its log stays). */
  close(ticketId: string): Promise<void> {
    return this.sessions.close(SupportDesk.sessionOf(ticketId), 'ticket solved');
  }
}
