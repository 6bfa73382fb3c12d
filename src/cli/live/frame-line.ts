// `--jsonl` output of `dh run` and `dh attach`: one JSON line per stream frame, its position first, so a
// script that stops can go on with `dh attach <session> --from <the last position it has>`.
import type { StreamFrame } from '../../streaming/session-follower.js';
import { formatPosition } from '../../streaming/stream-position.js';

export function frameLine(frame: StreamFrame): string {
  const { position, ...op } = frame;
  return `${JSON.stringify({ position: formatPosition(position), ...op })}\n`;
}

/** Writes frames to stdout as lines. */
export function writeFrameLine(frame: StreamFrame): void {
  process.stdout.write(frameLine(frame));
}
