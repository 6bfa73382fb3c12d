// Property tests of the eval log: for any log and any of its answered steps, and any declared change, the eval
// log is a valid log of its own (a fork-like child marked `eval`) whose request is the recorded request with the
// change applied and nothing else: the same messages and turn/step, the changed fields as declared, and equal
// digests without the changed fields. A request that differs elsewhere has another digest.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildRequest, buildSessionRequest, canonicalJson, foldRequestHeader, Session } from '../../src/core/index.js';
import { applyEvalChange, invariantDigest } from '../../src/eval/eval-change.js';
import {
  candidateSentSeq,
  evalLogEvents,
  evalRunOf,
  evalSessionIdFor,
  recordedSteps,
} from '../../src/eval/eval-log.js';
import { EvalChange } from '../../src/shared/eval-contracts.js';
import { LogDriver, logCommandArbitrary } from '../helpers/log-generator.js';

const changeArbitrary: fc.Arbitrary<EvalChange> = fc
  .record(
    {
      model: fc.constantFrom('deepseek-chat', 'deepseek-reasoner', 'another-model'),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      maxTokens: fc.integer({ min: 1, max: 8192 }),
      system: fc.string({ maxLength: 30 }),
      removeTools: fc.constant<string[]>(['read_file']),
      addTools: fc.constant<NonNullable<EvalChange['addTools']>>([
        { name: 'grep', description: 'Search', parameters: { type: 'object' } },
      ]),
    },
    { requiredKeys: [] },
  )
  .filter((change) => EvalChange.safeParse(change).success);

describe('eval log properties', () => {
  it('the candidate request is the recorded one with the change applied, and nothing else', () => {
    fc.assert(
      fc.property(
        fc.array(logCommandArbitrary, { minLength: 2, maxLength: 40 }),
        changeArbitrary,
        fc.nat(),
        (commands, change, pick) => {
          const source = new LogDriver('src').run(commands).session;
          const answered = recordedSteps(source.events).filter((s) => s.answer !== null);
          fc.pre(answered.length > 0);
          const { sent } = answered[pick % answered.length] as (typeof answered)[number];
          const sourceRequest = buildRequest('src', source.events.slice(0, sent.seq));
          const header = foldRequestHeader(source.events.slice(0, sent.seq));
          if (header === undefined) throw new Error('a sent request without a header');
          const evalId = evalSessionIdFor('run-1', 'src', sent.seq);
          const log = evalLogEvents(source, {
            evalSessionId: evalId,
            runId: 'run-1',
            sentSeq: sent.seq,
            at: 1,
            header: applyEvalChange(header, change),
          });
          // A valid log of its own, read back from its events alone.
          const reread = new Session(evalId, log.events);
          expect(evalRunOf(reread.events)).toBe('run-1');
          expect(reread.state.parent?.sessionId).toBe('src');
          expect(reread.state.openStep).toMatchObject({ turn: sent.turn, step: sent.step });
          expect(candidateSentSeq(reread.events)).toBeNull();
          // Its seed is the source's prefix, event for event (but the start).
          const seedLength = reread.state.parent?.seedLength ?? 0;
          expect(canonicalJson(reread.events.slice(1, seedLength))).toBe(
            canonicalJson(source.events.slice(1, seedLength)),
          );
          const candidate = buildSessionRequest(reread);
          expect(canonicalJson(candidate.messages)).toBe(canonicalJson(sourceRequest.messages));
          expect([candidate.turn, candidate.step]).toEqual([sourceRequest.turn, sourceRequest.step]);
          if (change.model !== undefined) expect(candidate.config.model).toBe(change.model);
          if (change.system !== undefined) expect(candidate.system).toBe(change.system);
          expect(invariantDigest(candidate, change)).toBe(invariantDigest(sourceRequest, change));
          // Anything beyond the change shows: another message history is another digest.
          const tampered = { ...candidate, messages: candidate.messages.slice(1) };
          if (candidate.messages.length > 0) {
            expect(invariantDigest(tampered, change)).not.toBe(invariantDigest(sourceRequest, change));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
