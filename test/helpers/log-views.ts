// Views of a session log the scenario tests assert on: events of one type (typed), and turn ends as
// `<turn>:<reason>` strings.
import type { SessionEvent } from '../../src/core/index.js';

export type EventOf<T extends SessionEvent['type']> = Extract<SessionEvent, { type: T }>;

export const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

export const turnEnds = (events: readonly SessionEvent[]): string[] =>
  ofType(events, 'turn/end').map((e) => `${e.turn}:${e.reason}`);
