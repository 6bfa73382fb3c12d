// Property tests of compaction's pure parts: the range never cuts a tool call from its result, a
// summary over it yields a valid log, pruning keeps every call id, and the summary request extends
// the next step's messages by exactly the instruction.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  buildCompactionRequest,
  canonicalJson,
  COMPACTION_INSTRUCTION,
  compactionRange,
  deriveMessages,
  findPairingProblem,
  pruneReplacements,
  type EventDraft,
} from '../../src/core/index.js';
import { LogDriver, logCommandArbitrary } from '../helpers/log-generator.js';

const logs = fc
  .tuple(fc.array(logCommandArbitrary, { minLength: 3, maxLength: 50 }), fc.nat({ max: 3 }))
  .map(([commands, keep]) => ({ driver: new LogDriver('s-compact').run(commands), keep }));

describe('compaction (pure)', () => {
  it('a summary over the chosen range always yields a valid log with a valid surface', () => {
    fc.assert(
      fc.property(logs, ({ driver, keep }) => {
        const s = driver.session;
        if (s.state.openStep || s.state.openCompaction) return;
        const range = compactionRange(s.events, keep);
        if (!range) return;
        const before = deriveMessages(s.events);
        const drafts: EventDraft[] = [
          { type: 'compact/start', at: 1, compactionId: 'k', trigger: 'manual' },
          { type: 'surface/replace', at: 1, replaceId: 'k', range, messages: [{ role: 'user', content: 'summary' }] },
          { type: 'compact/end', at: 1, compactionId: 'k', outcome: 'applied' },
        ];
        s.append(...drafts); // throws on a range that breaks the structure
        const after = s.deriveMessages();
        expect(findPairingProblem(after, false)).toBeNull();
        expect(after.length).toBe(before.length - (range.end - range.start + 1) + 1);
        expect(after.slice(1)).toEqual(before.slice(range.end + 1)); // the kept tail is verbatim
      }),
      { numRuns: 200 },
    );
  });

  it('pruning replaces only old tool outputs, one for one, keeping call ids', () => {
    fc.assert(
      fc.property(logs, ({ driver, keep }) => {
        const s = driver.session;
        if (s.state.openStep || s.state.openCompaction) return;
        const before = deriveMessages(s.events);
        const stubs = pruneReplacements(s.events, keep, 10);
        for (const stub of stubs) {
          const original = before[stub.position];
          expect(original?.role).toBe('tool');
          expect(stub.message).toMatchObject({
            role: 'tool',
            toolCallId: original?.role === 'tool' ? original.toolCallId : '',
          });
        }
        s.append(
          ...stubs.map((stub, i): EventDraft => ({
            type: 'surface/replace',
            at: 1,
            replaceId: `p${i}`,
            range: { start: stub.position, end: stub.position },
            messages: [stub.message],
          })),
        );
        expect(s.deriveMessages()).toHaveLength(before.length);
      }),
      { numRuns: 200 },
    );
  });

  it('the summary request is the current messages plus the instruction', () => {
    fc.assert(
      fc.property(logs, ({ driver }) => {
        const s = driver.session;
        if (!s.requestHeader() || !s.events.some((e) => e.type === 'step/start')) return;
        const request = buildCompactionRequest(s.sessionId, s.events, 512);
        const prefix = s.requestHeader()?.prefix ?? [];
        expect(request.messages.slice(0, -1).map((m) => canonicalJson(m))).toEqual(
          [...prefix, ...deriveMessages(s.events)].map((m) => canonicalJson(m)),
        );
        expect(request.messages.at(-1)).toEqual({ role: 'user', content: COMPACTION_INSTRUCTION });
        expect(request.config.maxTokens).toBe(512);
      }),
      { numRuns: 100 },
    );
  });
});
