// The chat's input line as data: a multiline text with a cursor, edited key by key, and what a finished
// line means — which of the three fates a message takes, or which slash command it is.

export interface InputState {
  readonly text: string;
  /** An index into `text` (0..length). */
  readonly cursor: number;
}

export const EMPTY_INPUT: InputState = { text: '', cursor: 0 };

export type InputEdit =
  | { readonly kind: 'insert'; readonly text: string }
  | { readonly kind: 'backspace' }
  | { readonly kind: 'left' }
  | { readonly kind: 'right' }
  | { readonly kind: 'home' }
  | { readonly kind: 'end' };

export function editInput(state: InputState, edit: InputEdit): InputState {
  const { text, cursor } = state;
  switch (edit.kind) {
    case 'insert':
      return { text: text.slice(0, cursor) + edit.text + text.slice(cursor), cursor: cursor + edit.text.length };
    case 'backspace':
      if (cursor === 0) return state;
      return { text: text.slice(0, cursor - 1) + text.slice(cursor), cursor: cursor - 1 };
    case 'left':
      return { text, cursor: Math.max(0, cursor - 1) };
    case 'right':
      return { text, cursor: Math.min(text.length, cursor + 1) };
    case 'home':
      return { text, cursor: text.lastIndexOf('\n', cursor - 1) + 1 };
    case 'end': {
      const next = text.indexOf('\n', cursor);
      return { text, cursor: next === -1 ? text.length : next };
    }
  }
}

/** A message's fate: `steer` enters the running turn's next step, `followup` starts a turn, `inject` rides along. */
export type MessageFate = 'steer' | 'followup' | 'inject';

/**
 * Enter while a turn runs steers it; Enter while idle starts a turn; Tab queues a followup for after the
 * running turn (while idle it is a plain followup).
 */
export function fateOf(key: 'enter' | 'tab', turnRunning: boolean): MessageFate {
  return key === 'enter' && turnRunning ? 'steer' : 'followup';
}

export type SlashCommand =
  | { readonly name: 'inject'; readonly text: string }
  | { readonly name: 'compact' | 'fork' | 'show' | 'audit' | 'help' }
  | { readonly name: 'unknown'; readonly raw: string };

const BARE = new Set(['compact', 'fork', 'show', 'audit', 'help']);

/** A line starting with `/` is a command (`//` sends a message starting with one `/`); null otherwise. */
export function parseSlash(line: string): SlashCommand | null {
  if (!line.startsWith('/') || line.startsWith('//')) return null;
  const match = /^\/(\S+)\s*([\s\S]*)$/.exec(line);
  const name = match?.[1] ?? '';
  const rest = (match?.[2] ?? '').trim();
  if (name === 'inject' && rest !== '') return { name: 'inject', text: rest };
  if (BARE.has(name) && rest === '') return { name: name as 'compact' | 'fork' | 'show' | 'audit' | 'help' };
  return { name: 'unknown', raw: line };
}

/** What a line sends as a message: `//x` sends `/x`. */
export function messageText(line: string): string {
  return line.startsWith('//') ? line.slice(1) : line;
}
