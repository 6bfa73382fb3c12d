// Where a live consumer stands in a session's stream: the log events it has (all below `seq`) and the
// last delta-channel row it has read past (`delta`). Every frame carries the position after it; a
// consumer that reconnects with it gets exactly the frames after that one (docs/streaming.md).
import { DhError } from '../core/index.js';

export interface StreamPosition {
  /** The next log seq the consumer has not been given: every event below it was delivered. */
  readonly seq: number;
  /** The last delta row (the channel's row id) the consumer has read past; 0: none. */
  readonly delta: number;
}

export const StreamPositionErrorCode = { Invalid: 'STREAM_POSITION_INVALID' } as const;

export const START_POSITION: StreamPosition = Object.freeze({ seq: 0, delta: 0 });

/** `seq:delta` — the form SSE event ids, `dh attach --from` and JSON frames use. */
export function formatPosition(position: StreamPosition): string {
  return `${position.seq}:${position.delta}`;
}

const POSITION = /^(\d{1,15})(?::(\d{1,15}))?$/;

/** Parses `seq:delta`, or a bare `seq` (no delta rows read yet); anything else is STREAM_POSITION_INVALID. */
export function parsePosition(text: string): StreamPosition {
  const match = POSITION.exec(text.trim());
  if (match === null) {
    throw new DhError(
      StreamPositionErrorCode.Invalid,
      `"${text.slice(0, 80)}" is not a stream position: expected <seq>:<delta> (e.g. 42:1187) or <seq>, as a frame's position gives it`,
    );
  }
  return { seq: Number(match[1]), delta: Number(match[2] ?? 0) };
}

/** True when `a` is at or after `b` in both parts (positions of one stream only ever grow in both). */
export function notBefore(a: StreamPosition, b: StreamPosition): boolean {
  return a.seq >= b.seq && a.delta >= b.delta;
}
