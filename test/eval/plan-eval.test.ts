// Which steps an eval run takes: every answered step (or each turn's first), never an eval log's, and a session
// the store holds no log of (a workflow Temporal's visibility listed from another store) left out, not fatal.
import { describe, expect, it } from 'vitest';
import { DhError, ErrorCode, type SessionEvent } from '../../src/core/index.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import { standardLog } from '../audit/audited-log.js';

describe('planEvalTargets', () => {
  it('takes the answered steps, leaves out eval logs and sessions the store does not hold', async () => {
    const logs = new Map<string, SessionEvent[]>([['s1', await standardLog('s1')]]);
    const start = logs.get('s1')?.[0];
    if (start?.type !== 'session/start') throw new Error('no start');
    // An eval log: the same events, its start marked with a run.
    logs.set('eval.r.s1.s5', [
      { ...start, sessionId: 'eval.r.s1.s5', eval: { runId: 'r' } },
      ...(logs.get('s1') ?? []).slice(1),
    ]);
    const read = (id: string) => {
      const events = logs.get(id);
      if (events === undefined) return Promise.reject(new DhError(ErrorCode.SessionNotFound, `no session "${id}"`));
      return Promise.resolve(events);
    };
    const all = await planEvalTargets(read, ['s1', 'eval.r.s1.s5', 'elsewhere'], { runId: 'run', at: 'step' });
    expect(all.targets.map((t) => `${t.sourceSessionId} ${t.turn}.${t.step}`)).toEqual([
      's1 1.1',
      's1 1.2',
      's1 2.1',
      's1 3.1',
    ]);
    expect(all.targets[0]?.evalSessionId).toBe(`eval.run.s1.s${all.targets[0]?.sentSeq ?? 0}`);
    expect(all.sessions).toEqual([
      { sessionId: 's1', steps: 4, unanswered: 0, isEval: false, missing: false },
      { sessionId: 'eval.r.s1.s5', steps: 0, unanswered: 0, isEval: true, missing: false },
      { sessionId: 'elsewhere', steps: 0, unanswered: 0, isEval: false, missing: true },
    ]);
    const turns = await planEvalTargets(read, ['s1'], { runId: 'run', at: 'turn' });
    expect(turns.targets.map((t) => `${t.turn}.${t.step}`)).toEqual(['1.1', '2.1', '3.1']);
  });

  it('a store failure other than a missing session is not swallowed', async () => {
    const read = () => Promise.reject(new Error('connection refused'));
    await expect(planEvalTargets(read, ['s1'], { runId: 'run', at: 'step' })).rejects.toThrow('connection refused');
  });
});
