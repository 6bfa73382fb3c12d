// Turns a pty recording (test/helpers/pty-terminal.ts) into an asciicast v2 file any asciinema player
// replays, and a screen into a plain-text block for docs: what a terminal test saw, shown to people.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PtyRecording } from './pty-terminal.js';

export interface AsciicastOptions {
  readonly title?: string;
  /** Also write the typed keys as `i` events (players ignore them; default false). */
  readonly input?: boolean;
}

/** The asciicast v2 text: a header object on the first line, then one `[seconds, code, data]` per line. */
export function asciicastText(recording: PtyRecording, options: AsciicastOptions = {}): string {
  const header = {
    version: 2,
    width: recording.cols,
    height: recording.rows,
    timestamp: Math.floor(recording.startedAt / 1000),
    env: { TERM: recording.term, SHELL: process.env.SHELL ?? '/bin/sh' },
    ...(options.title !== undefined ? { title: options.title } : {}),
  };
  const lines = [JSON.stringify(header)];
  for (const event of recording.events) {
    if (event.kind === 'i' && options.input !== true) continue;
    // Microsecond precision, as asciinema writes it; events are recorded in order, so times never go back.
    lines.push(JSON.stringify([Math.round(event.ms * 1000) / 1e6, event.kind, event.data]));
  }
  return `${lines.join('\n')}\n`;
}

export function writeAsciicast(path: string, recording: PtyRecording, options: AsciicastOptions = {}): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, asciicastText(recording, options));
}

export interface ScreenTextOptions {
  /** Width of the frame (default: the longest line). */
  readonly width?: number;
  /** Draw a box around the screen (default true); without it, just the lines. */
  readonly frame?: boolean;
}

/** A screen as plain text for a README: trailing blank rows dropped, optionally boxed. */
export function renderScreenText(lines: readonly string[], options: ScreenTextOptions = {}): string {
  const rows = lines.map((line) => line.trimEnd());
  while (rows.length > 0 && rows[rows.length - 1] === '') rows.pop();
  if (options.frame === false) return `${rows.join('\n')}\n`;
  const width = Math.max(options.width ?? 0, ...rows.map((row) => [...row].length));
  const bar = '─'.repeat(width + 2);
  // Padding counts code points, not UTF-16 units: "»" or "■" is one column, as the terminal drew it.
  const body = rows.map((row) => `│ ${row}${' '.repeat(width - [...row].length)} │`);
  return `${[`┌${bar}┐`, ...body, `└${bar}┘`].join('\n')}\n`;
}
