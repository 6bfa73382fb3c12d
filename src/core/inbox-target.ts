// Where an accepted message goes: the next turn, or the running turn's next step. Its own module because
// the workflow bundle needs only this schema; every module it imports is instantiated once per workflow.
import { z } from 'zod';

export const InboxTarget = z.enum(['next-turn', 'next-step']);
export type InboxTarget = z.infer<typeof InboxTarget>;
