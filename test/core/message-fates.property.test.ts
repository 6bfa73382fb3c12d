// Message fates read off the log agree with the log's own structural state, for generated logs: every
// enqueued message has exactly one fate; the queued ones are exactly what the log still queues; the entered
// ones are exactly the claimed ones, at the step that claimed them; folding event by event gives the same.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyFateEvent, messageFate, messageFates, Session, type MessageFate } from '../../src/core/index.js';
import { T0, sessionStart } from '../helpers/event-builders.js';
import { LogDriver, logCommandArbitrary } from '../helpers/log-generator.js';

const commands = fc.array(logCommandArbitrary, { minLength: 1, maxLength: 60 });

describe('messageFates', () => {
  it('agrees with the log: queued = still queued, entered = claimed (where), one fate per enqueued id', () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const { session } = new LogDriver().run(cmds);
        const fates = messageFates(session.events);
        const enqueued = session.events.flatMap((e) => (e.type === 'inbox/enqueue' ? [e.messageId] : []));
        expect([...fates.keys()]).toEqual(enqueued);
        const queued = [...fates.values()].filter((f) => f.state === 'queued').map((f) => f.messageId);
        expect(queued.sort()).toEqual([...session.state.queue.keys()].sort());
        const claims = new Map<string, string>();
        for (const e of session.events)
          if (e.type === 'inbox/claim') for (const id of e.messageIds) claims.set(id, `${e.turn}.${e.step}`);
        const entered = [...fates.values()].filter((f) => f.state === 'entered');
        expect(new Map(entered.map((f) => [f.messageId, `${f.entered?.turn}.${f.entered?.step}`]))).toEqual(claims);
        // Followed event by event, a reader reaches the same fates.
        const folded = new Map<string, MessageFate>();
        for (const e of session.events) applyFateEvent(folded, e);
        expect(folded).toEqual(fates);
      }),
    );
  });

  it('follows one message through a downgrade into the next turn, and through a discard', () => {
    const log = new Session('fates', [sessionStart('fates')]);
    const at = T0 + 1;
    log.append(
      { type: 'inbox/enqueue', at, messageId: 's', target: 'next-turn', wakeup: true, origin: 'steer', content: 'x' },
      { type: 'inbox/downgrade', at, messageId: 's', requested: 'next-step' },
      { type: 'inbox/enqueue', at, messageId: 'i', target: 'next-step', wakeup: false, origin: 'inject', content: 'y' },
    );
    expect(messageFate(log.events, 's')).toMatchObject({ state: 'queued', target: 'next-turn', downgraded: true });
    log.append(
      { type: 'turn/start', at, turn: 1 },
      { type: 'inbox/claim', at, turn: 1, step: 1, messageIds: ['s'] },
      { type: 'inbox/discard', at, messageIds: ['i'], reason: 'the session closed' },
    );
    expect(messageFate(log.events, 's')).toMatchObject({ state: 'entered', entered: { turn: 1, step: 1 } });
    expect(messageFate(log.events, 'i')).toMatchObject({
      state: 'discarded',
      discarded: { reason: 'the session closed' },
    });
    expect(messageFate(log.events, 'nope')).toBeUndefined();
  });
});
