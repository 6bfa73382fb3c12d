// The one session-id rule: what it accepts is exactly the ids a URL path segment and a command line carry
// unchanged; the log refuses a session/start under any other; ids dh derives (subagents, eval logs, forks)
// always pass it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  childSessionIdFor,
  ErrorCode,
  MAX_SESSION_ID_CHARS,
  parseEvent,
  SESSION_FORMAT_VERSION,
  sessionIdProblem,
} from '../../src/core/index.js';
import { evalSessionIdFor } from '../../src/eval/eval-log.js';

const idChar = fc.constantFrom(...'abcXYZ019._-');
const candidate = fc.oneof(
  fc.string({ unit: idChar, minLength: 0, maxLength: MAX_SESSION_ID_CHARS + 5 }),
  fc.constantFrom('.', '..', '...', '-rf', '--help', '-', 'a/b', 'a b', '%2E%2E', 'é', 'ok'),
);

/** The rule as stated: 1-120 of [A-Za-z0-9._-], no leading "-", not only dots. */
function statedRule(id: string): boolean {
  return /^[A-Za-z0-9._-]{1,120}$/.test(id) && !id.startsWith('-') && !/^\.+$/.test(id);
}

/** What a URL keeps as the one path segment it was given. */
function survivesUrl(id: string): boolean {
  return new URL(`http://h/api/sessions/${id}/events`).pathname === `/api/sessions/${id}/events`;
}

describe('the session-id rule', () => {
  it('accepts what it states, and every id it accepts a URL path segment and a command line carry unchanged', () => {
    fc.assert(
      fc.property(candidate, (id) => {
        const accepted = sessionIdProblem(id) === null;
        expect(accepted).toBe(statedRule(id));
        // Why the rule is what it is: an accepted id is addressable, and never read as an option.
        if (accepted) expect(survivesUrl(id) && !id.startsWith('-')).toBe(true);
      }),
      { numRuns: 2000 },
    );
    for (const id of ['..', '.', '...', '-rf', '--help']) expect(sessionIdProblem(id)).not.toBeNull();
    expect(sessionIdProblem('..')).toMatch(/only dots/);
    expect(sessionIdProblem('-rf')).toMatch(/may not start with "-"/);
  });

  it('is the log’s rule: a session/start under another id is refused on append and on load', () => {
    for (const sessionId of ['..', '-rf', 'a b']) {
      const start = { seq: 0, at: 1, key: 'session/start', type: 'session/start', sessionId };
      expect(() => parseEvent(sessionId, { ...start, formatVersion: SESSION_FORMAT_VERSION })).toThrow(
        expect.objectContaining({ code: ErrorCode.InvalidEvent }) as Error,
      );
    }
  });

  it('holds for every id dh derives: subagents and eval logs, however long their parents', () => {
    const parent = fc
      .string({ unit: idChar, minLength: 1, maxLength: MAX_SESSION_ID_CHARS })
      .filter((id) => sessionIdProblem(id) === null);
    const runId = fc.string({ unit: idChar, minLength: 1, maxLength: 60 });
    fc.assert(
      fc.property(parent, runId, fc.nat({ max: 1e9 }), (id, run, seq) => {
        expect(sessionIdProblem(childSessionIdFor(id, 1 + (seq % 50), 1 + (seq % 7), seq % 5))).toBeNull();
        expect(sessionIdProblem(evalSessionIdFor(run, id, 1 + seq))).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});
