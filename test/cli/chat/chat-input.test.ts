// The chat input's pure parts: line editing, which fate Enter and Tab give a message, and slash commands.
import { describe, expect, it } from 'vitest';
import {
  EMPTY_INPUT,
  editInput,
  fateOf,
  messageText,
  parseSlash,
  type InputEdit,
} from '../../../src/cli/chat/chat-input.js';

const typed = (...edits: InputEdit[]) => edits.reduce(editInput, EMPTY_INPUT);

describe('chat input', () => {
  it('edits at the cursor, across line breaks', () => {
    const state = typed(
      { kind: 'insert', text: 'helo' },
      { kind: 'left' },
      { kind: 'insert', text: 'l' },
      { kind: 'end' },
      { kind: 'insert', text: '\nsecond' },
      { kind: 'home' },
      { kind: 'backspace' },
    );
    expect(state).toEqual({ text: 'hellosecond', cursor: 5 });
    expect(typed({ kind: 'backspace' }, { kind: 'left' })).toEqual(EMPTY_INPUT);
    expect(typed({ kind: 'insert', text: 'ab' }, { kind: 'right' })).toEqual({ text: 'ab', cursor: 2 });
  });

  it('Enter steers a running turn and starts one when idle; Tab always waits for the next turn', () => {
    expect(fateOf('enter', true)).toBe('steer');
    expect(fateOf('enter', false)).toBe('followup');
    expect(fateOf('tab', true)).toBe('followup');
    expect(fateOf('tab', false)).toBe('followup');
  });

  it('slash commands, and // to send a message that starts with a slash', () => {
    expect(parseSlash('/inject the build is green')).toEqual({ name: 'inject', text: 'the build is green' });
    expect(parseSlash('/inject')).toEqual({ name: 'unknown', raw: '/inject' });
    for (const name of ['compact', 'fork', 'show', 'audit', 'help'] as const)
      expect(parseSlash(`/${name}`)).toEqual({ name });
    expect(parseSlash('/show me')).toEqual({ name: 'unknown', raw: '/show me' });
    expect(parseSlash('/nope')).toEqual({ name: 'unknown', raw: '/nope' });
    expect(parseSlash('hello /inject')).toBeNull();
    expect(parseSlash('//etc/hosts is odd')).toBeNull();
    expect(messageText('//etc/hosts is odd')).toBe('/etc/hosts is odd');
    expect(messageText('plain')).toBe('plain');
  });
});
