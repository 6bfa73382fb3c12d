// `dh eval` on the real stack: 20 recorded sessions with tool calls (an "old" scripted model), their steps sent
// again by a worker of a "new" scripted model with a declared change. The candidates differ from the recorded
// requests only by the change (shown on the derived wire bodies), each is an auditable log of its own, the
// sources are untouched (chain heads), the diffs say what the new model did differently, and the temporal CLI
// reads the run's progress.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import { deriveSentRequest } from '../../src/audit/derive-sent-requests.js';
import { sha256Digest } from '../../src/core/canonical-json.js';
import { Session } from '../../src/core/index.js';
import { buildEvalReport } from '../../src/eval/eval-report.js';
import { candidateSentSeq } from '../../src/eval/eval-log.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import type { EvalJudge } from '../../src/eval/eval-judge.js';
import {
  evalWorkflowId,
  type EvalChange,
  type EvalRunInput,
  type EvalRunResult,
} from '../../src/shared/eval-contracts.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import type { Fault, Script } from '../../src/scripted-provider/script.js';
import type { SessionStore } from '../../src/stores/session-store.js';
import { startEvalWorker, type EvalWorker } from '../helpers/eval-worker.js';
import { startChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { startHarness, TEST_MODEL, TEST_MODEL_2, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { temporal } from '../helpers/temporal-cli.js';
import { FleetLimiter } from '../../src/limiter/fleet-limiter.js';
import { SqliteLimiterStore } from '../../src/limiter/sqlite-limiter-store.js';
import { echoTool } from '../helpers/test-tools.js';

const SESSIONS = 20;
const ids = Array.from({ length: SESSIONS }, (_, n) => `rec-${n}`);
const task = (n: number) => `<task-${n}>`;

/** The old model: each task calls echo with its number, then answers `done N`. */
function recordingScript(): Script {
  return {
    mode: 'match',
    replies: ids.flatMap((_, n) => [
      {
        match: { lastUserContains: task(n) },
        toolCalls: [{ id: `call-${n}`, name: 'echo', arguments: { text: String(n) } }],
      },
      { match: { lastUserContains: task(n) }, text: `done ${n}` },
    ]),
  };
}

async function chainHead(store: SessionStore, id: string): Promise<{ head: number; chain: string | null }> {
  const { links } = await store.readChain(id);
  return { head: links.length, chain: links.at(-1)?.chain ?? null };
}

async function runEval(
  h: Harness,
  worker: EvalWorker,
  input: Omit<EvalRunInput, 'targets' | 'at'> & { at: 'step' | 'turn'; sessions?: readonly string[] },
): Promise<EvalRunResult> {
  const { targets } = await planEvalTargets((id) => h.store.read(id), input.sessions ?? ids, {
    runId: input.runId,
    at: input.at,
  });
  const handle = await h.client.workflow.start('evalRun', {
    taskQueue: worker.taskQueue,
    workflowId: evalWorkflowId(input.runId),
    args: [
      {
        runId: input.runId,
        change: input.change,
        targets,
        concurrency: input.concurrency,
        ...(input.budgetUsd !== undefined ? { budgetUsd: input.budgetUsd } : {}),
        at: Date.now(),
      } satisfies EvalRunInput,
    ],
  });
  return (await handle.result()) as EvalRunResult;
}

/** The wire body a log derives for its request at `sentSeq`, as parsed JSON. */
async function derivedBody(store: SessionStore, id: string, sentSeq: number): Promise<Record<string, unknown>> {
  const events = await store.read(id);
  const sent = events[sentSeq];
  if (sent?.type !== 'request/sent') throw new Error(`${id}: no request at ${sentSeq}`);
  const derived = await deriveSentRequest(id, events, sent);
  if (!derived.digestOk || derived.wire === null) throw new Error(`${id}: ${derived.error ?? 'digest differs'}`);
  return JSON.parse(derived.wire.body) as Record<string, unknown>;
}

describe('dh eval over recorded sessions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ script: recordingScript(), tools: [echoTool] });
    await Promise.all(
      ids.map(async (id, n) => {
        const handle = await h.start(id);
        await handle.signal(followupSignal, { content: `${task(n)} please echo your number` });
        await waitForTurnEnd(h.store, id, 1, 60_000);
      }),
    );
  }, 120_000);
  afterAll(async () => h?.stop());

  it('sends every step again with only the declared change, in logs of their own, leaving the sources as they were', async () => {
    const before = await Promise.all(ids.map((id) => chainHead(h.store, id)));
    const worker = await startEvalWorker({
      store: h.store,
      script: { replies: [], default: { text: 'a candidate answer' } },
    });
    try {
      const change: EvalChange = { model: TEST_MODEL_2, system: 'You are a careful test agent.' };
      const result = await runEval(h, worker, { runId: 'all-steps', change, concurrency: 4, at: 'step' });
      expect(result.outcomes).toHaveLength(SESSIONS * 2);
      expect(result.outcomes.map((o) => o.status)).toEqual(result.outcomes.map(() => 'answered'));
      for (const outcome of result.outcomes) {
        const { target } = outcome;
        expect(outcome.candidateInvariant).toBe(outcome.sourceInvariant);
        // Independently of the activity's own digests: the bodies both logs derive differ in the model and
        // the system message, and in nothing else.
        const evalEvents = await h.store.read(target.evalSessionId);
        const source = await derivedBody(h.store, target.sourceSessionId, target.sentSeq);
        const candidate = await derivedBody(h.store, target.evalSessionId, candidateSentSeq(evalEvents) ?? -1);
        const strip = (body: Record<string, unknown>) => {
          const { model, messages, ...rest } = body;
          const [system, ...history] = messages as { role: string; content: unknown }[];
          return { model, system, rest: sha256Digest(JSON.stringify({ rest, history })) };
        };
        const s = strip(source);
        const c = strip(candidate);
        expect([s.model, c.model]).toEqual(['scripted-model', TEST_MODEL_2]);
        expect(c.system).toEqual({ role: 'system', content: 'You are a careful test agent.' });
        expect(s.system).not.toEqual(c.system);
        expect(c.rest).toBe(s.rest);
        // The candidate log is a fork-like child marked `eval`, whose audit re-derives its request and chain.
        const start = evalEvents[0];
        expect(start?.type === 'session/start' && start.eval).toEqual({ runId: 'all-steps' });
        expect(start?.type === 'session/start' && start.parent?.sessionId).toBe(target.sourceSessionId);
        const audit = await auditSession({ store: h.store, sessionId: target.evalSessionId });
        expect(audit.failures).toEqual([]);
        // Closed: no dangling tool call, no open step or turn.
        const closed = new Session(target.evalSessionId, evalEvents);
        expect(closed.state.openTurn).toBeNull();
      }
      // What the new provider received is exactly what the eval logs recorded as sent, each once.
      const received = worker.provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => sha256Digest(r.body))
        .sort();
      const recorded = result.outcomes.map((o) => o.candidateDigest).sort();
      expect(received).toEqual(recorded);
      // The sources did not move.
      expect(await Promise.all(ids.map((id) => chainHead(h.store, id)))).toEqual(before);
      // The report re-derived from the logs agrees.
      const report = await buildEvalReport(result, (id) => h.store.read(id));
      expect(report.beyondTheChange).toBe(0);
      expect(report.counts).toEqual({ steps: 40, answered: 40, skipped: 0, failed: 0 });
      expect(report.totals.textEqual).toBe(0);
      // The real temporal CLI reads the finished run's progress through the query.
      const query = await temporal(
        'workflow',
        'query',
        '--workflow-id',
        evalWorkflowId('all-steps'),
        '--type',
        'evalProgress',
        '-o',
        'json',
      );
      expect(query.code, query.output).toBe(0);
      expect(query.output).toMatch(/"done":\s*40/);
      expect(query.output).toMatch(/"answered":\s*40/);
    } finally {
      await worker.stop();
    }
  }, 180_000);

  it('diffs what the new model did differently: tool calls by name and arguments, text, finish reason, and the judges', async () => {
    // Each task's first step, answered by the new model in four ways (n mod 4).
    const script: Script = {
      mode: 'match',
      replies: ids.map((_, n) => {
        const match = { lastUserContains: task(n) };
        switch (n % 4) {
          case 0:
            return { match, toolCalls: [{ id: `new-${n}`, name: 'echo', arguments: { text: String(n) } }] };
          case 1:
            return { match, toolCalls: [{ id: `new-${n}`, name: 'echo', arguments: { text: `${n} again` } }] };
          case 2:
            return { match, text: `I will not call a tool for ${n}` };
          default:
            return {
              match,
              toolCalls: [
                { id: `new-${n}-a`, name: 'echo', arguments: { text: String(n) } },
                { id: `new-${n}-b`, name: 'echo', arguments: { text: 'extra' } },
              ],
            };
        }
      }),
    };
    const failing: EvalJudge = {
      name: 'flaky',
      judge: () => {
        throw new Error('the judge is down');
      },
    };
    const worker = await startEvalWorker({ store: h.store, script, judges: [failing] });
    try {
      const result = await runEval(h, worker, {
        runId: 'first-steps',
        change: { model: TEST_MODEL_2 },
        concurrency: 3,
        at: 'turn',
      });
      const report = await buildEvalReport(result, (id) => h.store.read(id));
      expect(report.counts).toEqual({ steps: 20, answered: 20, skipped: 0, failed: 0 });
      for (const step of report.steps) {
        const n = Number(step.outcome.target.sourceSessionId.slice('rec-'.length));
        const diff = step.diff;
        if (diff === null) throw new Error(`rec-${n}: no diff`);
        const verdicts = diff.toolCalls.map((c) => c.verdict);
        const judges = Object.fromEntries((step.outcome.judges ?? []).map((j) => [j.judge, j]));
        expect(judges.flaky).toMatchObject({ score: null, error: expect.stringContaining('the judge is down') });
        switch (n % 4) {
          case 0:
            expect(verdicts).toEqual(['same']);
            expect(diff.toolCallsEqual).toBe(true);
            expect(diff.finishReason).toEqual({ source: 'tool_calls', candidate: 'tool_calls', equal: true });
            expect(judges.structural?.score).toBe(1);
            break;
          case 1:
            expect(verdicts).toEqual(['arguments-differ']);
            expect(diff.toolCalls[0]?.argumentPaths).toEqual(['/text']);
            expect(judges.structural?.score).toBeLessThan(1);
            break;
          case 2:
            expect(verdicts).toEqual(['missing']);
            expect(diff.finishReason).toEqual({ source: 'tool_calls', candidate: 'stop', equal: false });
            expect(diff.textEqual).toBe(false);
            break;
          default:
            expect(verdicts).toEqual(['same', 'extra']);
            expect(diff.toolCallsEqual).toBe(false);
        }
        // Tokens and latency come from both logs.
        expect(diff.outputTokens.source).toBeGreaterThan(0);
        expect(diff.outputTokens.candidate).toBeGreaterThan(0);
        expect(diff.latencyMs.candidate).not.toBeNull();
      }
      expect(report.totals.toolCallsEqual).toBe(5);
      expect(report.judges.find((j) => j.judge === 'flaky')).toMatchObject({ scored: 0, errors: 20 });
    } finally {
      await worker.stop();
    }
  }, 180_000);

  it('stays within its budget: the candidates it could not afford are not sent, and say why', async () => {
    // Priced by output only, so a candidate's worst case (its whole 1,000-token output limit) is exactly $1,
    // and each answer uses all of it: a $2.50 budget affords two of the five first steps, never a third.
    const price = { inputPerMillion: 0, cachedInputPerMillion: 0, outputPerMillion: 1_000 };
    const worker = await startEvalWorker({
      store: h.store,
      script: { replies: [], default: { text: 'ok', usage: { completion_tokens: 1_000 } } },
      fleet: { pricing: { [`scripted/${TEST_MODEL_2}`]: price } },
    });
    try {
      const result = await runEval(h, worker, {
        runId: 'budgeted',
        change: { model: TEST_MODEL_2, maxTokens: 1_000 },
        concurrency: 2,
        budgetUsd: 2.5,
        at: 'turn',
        sessions: ids.slice(0, 5),
      });
      const answered = result.outcomes.filter((o) => o.status === 'answered');
      const skipped = result.outcomes.filter((o) => o.status === 'skipped');
      expect(answered).toHaveLength(2);
      expect(skipped).toHaveLength(3);
      for (const s of skipped) expect(s.reason).toMatch(/^over budget: this call may cost up to \$\d/);
      expect(result.spentUsd).toBeCloseTo(2, 9);
      expect(result.spentUsd).toBeCloseTo(
        answered.reduce((sum, o) => sum + (o.costUsd ?? 0), 0),
        9,
      );
      // Nothing was sent (or logged) for a skipped step.
      const sent = worker.provider.requests().filter((r) => r.path.endsWith('/chat/completions'));
      expect(sent).toHaveLength(answered.length);
      for (const s of skipped)
        await expect(h.store.head(s.target.evalSessionId)).rejects.toThrow(/not found|no session/i);
    } finally {
      await worker.stop();
    }
  }, 120_000);

  it('resumes after its worker is killed mid-run, sending no completed step again', async () => {
    const provider = await startScriptedProvider({
      script: { models: [TEST_MODEL, TEST_MODEL_2], replies: [], default: { text: 'a slow candidate', delayMs: 250 } },
    });
    const taskQueue = `eval-kill-${process.pid}-${Date.now()}`;
    const config: WorkerProcessConfig = {
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      taskQueue,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath: h.storePath,
      providerBaseURL: provider.url,
      runLog: join(h.dir, 'eval-kill-runs.log'),
      idleTimeoutMs: 5_000,
    };
    let child = await startChildWorker(config);
    try {
      const { targets } = await planEvalTargets((id) => h.store.read(id), ids, { runId: 'killed', at: 'turn' });
      const handle = await h.client.workflow.start('evalRun', {
        taskQueue,
        workflowId: evalWorkflowId('killed'),
        args: [
          {
            runId: 'killed',
            change: { model: TEST_MODEL_2 },
            targets,
            concurrency: 2,
            at: Date.now(),
          } satisfies EvalRunInput,
        ],
      });
      const answeredNow = async () => {
        const answered = new Map<string, string>();
        for (const target of targets) {
          const events = await h.store.read(target.evalSessionId).catch(() => []);
          const sent = candidateSentSeq(events);
          const answer = events.find((e) => e.type === 'assistant/message' && sent !== null && e.seq > sent);
          const sentEvent = sent !== null ? events[sent] : undefined;
          if (answer !== undefined && sentEvent?.type === 'request/sent')
            answered.set(target.evalSessionId, sentEvent.digest);
        }
        return answered;
      };
      let before = new Map<string, string>();
      const deadline = Date.now() + 60_000;
      while (before.size < 6 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        before = await answeredNow();
      }
      expect(before.size).toBeGreaterThanOrEqual(6);
      child.kill('SIGKILL');
      await child.exited;
      before = await answeredNow();
      expect(before.size).toBeLessThan(targets.length);
      child = await startChildWorker(config);
      const result = (await handle.result()) as EvalRunResult;
      expect(result.outcomes.map((o) => o.status)).toEqual(targets.map(() => 'answered'));
      const sentBodies = provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => sha256Digest(r.body));
      // A step answered before the kill went out once; at most the two in flight at the kill went out twice.
      for (const digest of before.values()) expect(sentBodies.filter((d) => d === digest)).toHaveLength(1);
      expect(sentBodies.length).toBeLessThanOrEqual(targets.length + 2);
      for (const outcome of result.outcomes) {
        expect((await auditSession({ store: h.store, sessionId: outcome.target.evalSessionId })).failures).toEqual([]);
      }
    } finally {
      await child.stop();
      await provider.close();
    }
  }, 180_000);

  it("waits for the fleet limiter like a session's step: 4 lanes, 1 call in flight across the fleet", async () => {
    const limiter = new FleetLimiter({
      store: SqliteLimiterStore.open(join(h.dir, 'eval.limits.db')),
      bucket: 'scripted:eval',
      quota: { maxConcurrent: 1 },
      pollMs: 20,
    });
    const worker = await startEvalWorker({
      store: h.store,
      script: { replies: [], default: { text: 'one at a time', delayMs: 150 } },
      fleet: { limiter },
    });
    try {
      const result = await runEval(h, worker, {
        runId: 'limited',
        change: { model: TEST_MODEL_2 },
        concurrency: 4,
        at: 'turn',
        sessions: ids.slice(0, 6),
      });
      expect(result.outcomes.map((o) => o.status)).toEqual(ids.slice(0, 6).map(() => 'answered'));
      // Each call reached the provider only after the one before it had answered (150 ms later).
      const arrivals = worker.provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => r.receivedAt)
        .sort((a, b) => a - b);
      expect(arrivals).toHaveLength(6);
      const gaps = arrivals.slice(1).map((at, i) => at - (arrivals[i] ?? 0));
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(140);
    } finally {
      await worker.stop();
      await limiter.close();
    }
  }, 120_000);

  it("records a real provider's refusal as a failed step with its stable code, and the run goes on", async () => {
    // DeepSeek's own context-overflow answer, recorded (test/providers/fixtures/context-overflow/deepseek.json).
    const fixture = JSON.parse(
      readFileSync(new URL('../providers/fixtures/context-overflow/deepseek.json', import.meta.url), 'utf8'),
    ) as { status: number; body: Extract<Fault, { kind: 'recorded' }>['body'] };
    const worker = await startEvalWorker({
      store: h.store,
      script: {
        replies: [],
        default: { fault: { kind: 'recorded', status: fixture.status, body: fixture.body } },
      },
    });
    try {
      const result = await runEval(h, worker, {
        runId: 'refused',
        change: { model: TEST_MODEL_2 },
        concurrency: 2,
        at: 'turn',
        sessions: ids.slice(0, 3),
      });
      expect(result.outcomes.map((o) => [o.status, o.code])).toEqual(
        ids.slice(0, 3).map(() => ['failed', 'CONTEXT_LENGTH_EXCEEDED']),
      );
      expect(result.outcomes[0]?.reason).toContain('maximum context length is 131072 tokens');
      // Not retryable: each was sent once.
      expect(worker.provider.requests().filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(3);
      const report = await buildEvalReport(result, (id) => h.store.read(id));
      expect(report.counts).toEqual({ steps: 3, answered: 0, skipped: 0, failed: 3 });
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
