// `dh audit --rejudge` with evaluators asked again: a call today's rules leave open goes to them, with the
// worker's handling (a failure asks), and its verdict is compared by outcome; calls a rule decides are not
// put to them, and without evaluators an evaluator's verdict still counts as the same while the rules leave it open.
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { rejudgeVerdicts } from '../../src/audit/rejudge-verdicts.js';
import type { PolicyEvaluator } from '../../src/policy/consult-evaluators.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { verdictInputsDigest } from '../../src/policy/verdict-inputs.js';

const CALLS = [
  { id: 'c1', name: 'shell', arguments: '{"command":"ls"}' },
  { id: 'c2', name: 'shell', arguments: '{"command":"rm -rf build"}' },
  { id: 'c3', name: 'read_file', arguments: '{"path":"a"}' },
];

/** A step with three calls and the verdicts a worker logged: the shell calls by an evaluator, read_file by a rule. */
function session(): SessionEvent[] {
  const verdict = (seq: number, call: (typeof CALLS)[number], outcome: string, by: string, extra = {}) => ({
    type: 'policy/verdict',
    seq,
    at: seq,
    turn: 1,
    step: 1,
    callId: call.id,
    name: call.name,
    inputs: verdictInputsDigest(call.name, call.arguments, {}),
    outcome,
    by,
    version: by === 'evaluator' ? 'judge-1' : 'p1',
    ...extra,
  });
  return [
    { type: 'assistant/message', seq: 1, at: 1, turn: 1, step: 1, text: '', toolCalls: CALLS },
    verdict(2, CALLS[0]!, 'allow', 'evaluator', { evaluator: 'judge' }),
    verdict(3, CALLS[1]!, 'allow', 'evaluator', { evaluator: 'judge' }),
    verdict(4, CALLS[2]!, 'allow', 'rule', { rule: 'reads' }),
  ] as unknown as SessionEvent[];
}

const policy = parsePolicy(
  JSON.stringify({ version: 'p2', rules: [{ id: 'reads', tool: 'read_file', outcome: 'allow' }] }),
  '/p.json',
);

describe('rejudgeVerdicts with evaluators', () => {
  it('puts only the calls the rules leave open to them, and names a changed answer', async () => {
    const asked: string[] = [];
    const judge: PolicyEvaluator = {
      name: 'judge',
      version: 'judge-2',
      evaluate: (call, question) => {
        asked.push(`${call.callId} ${question.rules.by} ${question.events.length}`);
        return call.arguments.includes('rm -rf')
          ? { decision: 'deny', reason: 'deletes files', confidence: 0.9 }
          : { decision: 'allow', confidence: 0.9 };
      },
    };
    const report = await rejudgeVerdicts({ sessionId: 's', events: session(), policy, evaluators: [judge] });
    expect(asked).toEqual(['c1 default 1', 'c2 default 2']);
    expect(report.verdicts.map((v) => [v.callId, v.status, v.now?.outcome, v.now?.evaluator ?? v.now?.rule])).toEqual([
      ['c1', 'same', 'allow', 'judge'],
      ['c2', 'differs', 'deny', 'judge'],
      ['c3', 'same', 'allow', 'reads'],
    ]);
    expect(report).toMatchObject({ differs: 1, ok: false });
  });

  it('a failing evaluator asks, as in the worker, and says why', async () => {
    const broken: PolicyEvaluator = {
      name: 'judge',
      version: 'judge-2',
      evaluate: () => Promise.reject(new Error('model unreachable')),
    };
    const report = await rejudgeVerdicts({ sessionId: 's', events: session(), policy, evaluators: [broken] });
    expect(report.verdicts[0]).toMatchObject({
      status: 'differs',
      now: { outcome: 'ask', evaluator: 'judge' },
      note: 'judge failed: model unreachable',
    });
  });

  it('without evaluators, an evaluator verdict is the same while the rules leave the call open', async () => {
    const report = await rejudgeVerdicts({ sessionId: 's', events: session(), policy });
    expect(report.verdicts.map((v) => v.status)).toEqual(['same', 'same', 'same']);
    expect(report.verdicts[0]?.note).toMatch(/not re-run offline/);
  });
});
