// The one request builder: a pure function of the log shared by the live loop, resume, replay, audit
// and the outbound gate. Its output is deep-frozen: a built request cannot be edited, only rebuilt.
import type { CallConfig, ToolSchema } from './request-header.js';
import type { Message } from './messages.js';

/** A model request exactly as the log explains it. Deep-frozen. */
export interface BuiltRequest {
  readonly sessionId: string;
  /** The step this request belongs to (the open step of the log it was built from). */
  readonly turn: number;
  readonly step: number;
  readonly config: Readonly<CallConfig>;
  readonly system?: string;
  /** Tool schemas in recorded order (empty when the header has none). */
  readonly tools: readonly ToolSchema[];
  /** The header's session prefix followed by the derived history. */
  readonly messages: readonly Message[];
}
