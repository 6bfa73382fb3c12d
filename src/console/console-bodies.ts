// The request bodies of the console's actions, as zod schemas (validated on arrival; the OpenAPI
// document carries their JSON Schemas). Message content has the limits the workflow's signals have.
import { z } from 'zod';
import { ApprovePayload, MessageSignalPayload, SessionId } from '../shared/session-messages.js';

export const MessageBody = MessageSignalPayload.omit({ messageId: true }).extend({
  kind: z.enum(['followup', 'steer', 'inject']),
});
export type MessageBody = z.infer<typeof MessageBody>;

export const ApprovalBody = z.strictObject({
  decision: ApprovePayload.shape.decision,
  reason: ApprovePayload.shape.reason,
  remember: ApprovePayload.shape.remember,
});
export type ApprovalBody = z.infer<typeof ApprovalBody>;

export const InterruptBody = z.strictObject({ reason: z.string().max(500).optional() });
export type InterruptBody = z.infer<typeof InterruptBody>;

export const CompactBody = z.strictObject({ prune: z.boolean().optional() });
export type CompactBody = z.infer<typeof CompactBody>;

export const ForkBody = z.strictObject({
  atSeq: z.number().int().positive(),
  as: SessionId.optional(),
});
export type ForkBody = z.infer<typeof ForkBody>;
