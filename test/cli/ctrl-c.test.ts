// SIGINTs that arrive together are one Ctrl-C (npm forwards a copy of the terminal's); a later one is the second.
import { describe, expect, it } from 'vitest';
import { ctrlC, CTRL_C_WINDOW_MS } from '../../src/cli/live/ctrl-c.js';

function presses(times: readonly number[], windowMs?: number): string[] {
  const calls: string[] = [];
  let now = 0;
  const onSigint = ctrlC({ first: () => calls.push('first'), again: () => calls.push('again') }, windowMs, () => now);
  for (const at of times) {
    now = at;
    onSigint();
  }
  return calls;
}

describe('ctrlC', () => {
  it('counts SIGINTs within the window of the first as that one Ctrl-C', () => {
    expect(presses([1_000, 1_004])).toEqual(['first']);
    expect(presses([1_000, 1_004, 1_000 + CTRL_C_WINDOW_MS - 1])).toEqual(['first']);
  });

  it('counts each SIGINT from the window on as another Ctrl-C', () => {
    expect(presses([1_000, 1_004, 2_000])).toEqual(['first', 'again']);
    expect(presses([1_000, 2_000, 2_003])).toEqual(['first', 'again', 'again']);
    expect(presses([0, 0], 0)).toEqual(['first', 'again']);
  });
});
