// The session workflow's `state` query answer (SessionStateView) as a zod schema, for the console's answers
// that carry it: the workflow defines the shape, this mirrors it, and the typecheck holds the two equal.
import { z } from 'zod';
import type { SessionStateView } from '../shared/session-messages.js';
import type { SameShape } from './same-shape.js';

const Count = z.int().nonnegative();
const TurnEnd = z.object({ turn: Count, reason: z.string(), errorCode: z.string().nullable() });

export const SessionStateViewSchema = z.object({
  sessionId: z.string(),
  status: z.enum(['idle', 'running', 'aborting', 'closed']),
  turn: Count,
  step: Count,
  queues: z.object({ nextTurn: Count, nextStep: Count, notYetLogged: Count }),
  head: Count,
  rejectedSignals: Count,
  lastRejection: z.string().nullable(),
  wakeLatched: z.boolean(),
  closing: z.boolean(),
  lastTurnEnd: TurnEnd.nullable(),
  recentTurnEnds: z.array(TurnEnd).optional(),
  usage: z.object({ inputUncached: Count, cacheRead: Count, output: Count, reasoning: Count }),
  pendingApproval: z
    .object({ callId: z.string(), shortId: z.string().optional(), name: z.string(), reason: z.string() })
    .nullable(),
  compactions: Count,
  children: z.array(z.object({ callId: z.string(), sessionId: z.string() })).optional(),
});

type Expect<T extends true> = T;
export type StateViewSchemaMatchesItsType = Expect<SameShape<SessionStateView, typeof SessionStateViewSchema>>;
