// The session owns what it holds: parseEvent returns a graph that shares no object with its input, so the
// session freezes that output in place, and nothing a caller or a store handed in can change it afterwards.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson, parseEvent, Session, type EventDraft } from '../../src/core/index.js';
import { LogDriver, logCommandArbitrary } from '../helpers/log-generator.js';

const commands = fc.array(logCommandArbitrary, { minLength: 1, maxLength: 40 });

/** Every object and array reachable from `value`. */
function objectsOf(value: unknown, into = new Set<object>()): Set<object> {
  if (value !== null && typeof value === 'object' && !into.has(value)) {
    into.add(value);
    for (const child of Object.values(value)) objectsOf(child, into);
  }
  return into;
}

/** Sets every string reachable from `value` to 'mutated' (the input must not be frozen). */
function scribble(value: unknown): void {
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value)) {
    if (typeof child === 'string') (value as Record<string, unknown>)[key] = 'mutated';
    else scribble(child);
  }
}

describe('session ownership', () => {
  it('parseEvent shares no object with its input; a session of handed-in events is unchanged when they are', () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const { events, sessionId } = new LogDriver().run(cmds).session;
        const raw = JSON.parse(JSON.stringify(events)) as unknown[];
        raw.forEach((input, seq) => {
          const inputs = objectsOf(input);
          for (const output of objectsOf(parseEvent(sessionId, input, seq))) expect(inputs.has(output)).toBe(false);
        });
        const loaded = new Session(sessionId, raw);
        const drafts = JSON.parse(
          JSON.stringify(events.map(({ seq: _s, key: _k, ...draft }) => draft)),
        ) as EventDraft[];
        const appended = new Session(sessionId);
        appended.append(...drafts);
        const before = canonicalJson(events);
        scribble(raw);
        scribble(drafts);
        expect(canonicalJson(loaded.events)).toBe(before);
        expect(canonicalJson(appended.events)).toBe(before);
        expect(loaded.events.every((e) => Object.isFrozen(e))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});
