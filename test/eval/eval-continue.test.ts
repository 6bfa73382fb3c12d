// `dh eval --continue` on the real stack: the rest of each recorded turn runs on the candidate in its eval log.
// Idempotent tools run in a throw-away copy of the source's workspace (the copy is seen, the source's workspace is
// not touched, the copy is removed); a non-idempotent tool is refused with a result the model reads, unless the
// run allows it by name; the turns are compared whole.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import { Session, type SessionEvent } from '../../src/core/index.js';
import { buildEvalReport } from '../../src/eval/eval-report.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import { evalWorkflowId, type EvalRunInput, type EvalRunResult } from '../../src/shared/eval-contracts.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { startEvalWorker } from '../helpers/eval-worker.js';
import { startChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { startHarness, TEST_MODEL, TEST_MODEL_2, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { echoTool, sleepTool } from '../helpers/test-tools.js';

const ids = ['cont-0', 'cont-1', 'cont-2'];
const task = (n: number) => `<cont-${n}>`;

/** Reads the workspace's seed.txt and leaves a note.txt: idempotent, and it shows which workspace it ran in. */
const peekTool: ToolDefinition = {
  schema: { name: 'peek', description: 'Read seed.txt and leave a note.', parameters: { type: 'object' } },
  idempotent: true,
  run: (_args, context) => {
    const seed = existsSync(join(context.workspace, 'seed.txt'))
      ? readFileSync(join(context.workspace, 'seed.txt'), 'utf8')
      : '(none)';
    writeFileSync(join(context.workspace, 'note.txt'), 'left by the evaluation');
    return Promise.resolve({ status: 'ok', output: `seed: ${seed}` });
  },
};

describe('dh eval --continue', () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: ids.flatMap((_, n) => [
          {
            match: { lastUserContains: task(n) },
            toolCalls: [{ id: `r-${n}`, name: 'echo', arguments: { text: String(n) } }],
          },
          { match: { lastUserContains: task(n) }, text: `recorded ${n}` },
        ]),
      },
      tools: [echoTool],
    });
    dir = h.dir;
    for (const [n, id] of ids.entries()) {
      const handle = await h.start(id);
      await handle.signal(followupSignal, { content: `${task(n)} echo your number` });
      await waitForTurnEnd(h.store, id, 1, 60_000);
      // What the session's workspace holds now: the continued turn's tools see a copy of it.
      mkdirSync(join(tmpdir(), 'dh-workspaces', id), { recursive: true });
      writeFileSync(join(tmpdir(), 'dh-workspaces', id, 'seed.txt'), `seed of ${id}`);
    }
  }, 120_000);
  afterAll(async () => h?.stop());

  async function run(input: Omit<EvalRunInput, 'targets' | 'at'>, taskQueue: string, sessions: readonly string[]) {
    const { targets } = await planEvalTargets((id) => h.store.read(id), sessions, { runId: input.runId, at: 'turn' });
    const handle = await h.client.workflow.start('evalRun', {
      taskQueue,
      workflowId: evalWorkflowId(input.runId),
      args: [{ ...input, targets, at: Date.now() } satisfies EvalRunInput],
    });
    return (await handle.result()) as EvalRunResult;
  }

  /** The new model: each task calls peek, echo and sleep, then answers. */
  const candidateScript = {
    mode: 'match' as const,
    replies: ids.flatMap((_, n) => [
      {
        match: { lastUserContains: task(n) },
        toolCalls: [
          { id: `p-${n}`, name: 'peek', arguments: {} },
          { id: `e-${n}`, name: 'echo', arguments: { text: String(n) } },
          { id: `s-${n}`, name: 'sleep', arguments: { ms: 5 } },
        ],
      },
      { match: { lastUserContains: task(n) }, text: `candidate ${n}` },
    ]),
  };
  const sleepSchema = sleepTool('unused').schema;
  /** The new model's worker, with the tools a continued turn may run (sleep logs its runs to `runLog`). */
  const candidateWorker = (runLog: string) =>
    startEvalWorker({ store: h.store, script: candidateScript, tools: [echoTool, peekTool, sleepTool(runLog)] });
  const change = { model: TEST_MODEL_2, addTools: [peekTool.schema, sleepSchema] };

  it('runs the rest of each turn: idempotent tools in a throw-away copy of the workspace, others refused', async () => {
    const runLog = join(dir, 'sleep-runs.log');
    const worker = await candidateWorker(runLog);
    try {
      const result = await run(
        {
          runId: 'continued',
          change,
          concurrency: 2,
          mode: 'continue',
        },
        worker.taskQueue,
        ids,
      );
      expect(result.outcomes.map((o) => o.status)).toEqual(['answered', 'answered', 'answered']);
      expect(result.outcomes.map((o) => o.steps)).toEqual(ids.map(() => ({ source: 2, candidate: 2 })));
      expect(existsSync(runLog)).toBe(false); // sleep never ran
      for (const [n, outcome] of result.outcomes.entries()) {
        const events = await h.store.read(outcome.target.evalSessionId);
        const results = events.flatMap((e) => (e.type === 'tool/result' ? [[e.name, e.status, e.output]] : []));
        // The seed's own echo result, then the candidate's three calls.
        expect(results.slice(-3)).toEqual([
          ['peek', 'ok', `seed: seed of cont-${n}`],
          ['echo', 'ok', `echo: "${n}"`],
          ['sleep', 'error', expect.stringContaining('"sleep" is not idempotent; it runs only when the run allows it')],
        ]);
        const answers = events.filter(
          (e): e is Extract<SessionEvent, { type: 'assistant/message' }> => e.type === 'assistant/message',
        );
        expect(answers.at(-1)?.content).toBe(`candidate ${n}`);
        expect(new Session(outcome.target.evalSessionId, events).state.lastTurnEnd?.reason).toBe('completed');
        expect((await auditSession({ store: h.store, sessionId: outcome.target.evalSessionId })).failures).toEqual([]);
        // The source's workspace is as it was; the copy is gone.
        expect(existsSync(join(tmpdir(), 'dh-workspaces', `cont-${n}`, 'note.txt'))).toBe(false);
        expect(existsSync(join(tmpdir(), 'dh-eval-workspaces', outcome.target.evalSessionId))).toBe(false);
      }
      // The turns compared whole: the recorded turn called echo; the candidate peek, echo and sleep.
      const report = await buildEvalReport(result, (id) => h.store.read(id));
      expect(report.mode).toBe('continue');
      expect(report.steps.map((s) => s.diff?.toolCalls.map((c) => c.verdict))).toEqual(
        ids.map(() => ['name-differs', 'extra', 'extra']),
      );
      expect(report.steps.map((s) => s.candidate?.content)).toEqual(ids.map((_, n) => `candidate ${n}`));
      expect(report.beyondTheChange).toBe(0);
    } finally {
      await worker.stop();
    }
  }, 120_000);

  it('runs a tool the run allows by name', async () => {
    const runLog = join(dir, 'allowed-sleep-runs.log');
    const worker = await candidateWorker(runLog);
    try {
      const result = await run(
        {
          runId: 'continued-allowed',
          change,
          concurrency: 1,
          mode: 'continue',
          allowTools: ['sleep'],
        },
        worker.taskQueue,
        ['cont-1'],
      );
      expect(result.outcomes.map((o) => o.status)).toEqual(['answered']);
      expect(readFileSync(runLog, 'utf8').trim()).toBe('s-1');
      const events = await h.store.read(result.outcomes[0]?.target.evalSessionId ?? '');
      expect(events.findLast((e) => e.type === 'tool/result')).toMatchObject({
        name: 'sleep',
        status: 'ok',
        output: 'slept 5 ms',
      });
    } finally {
      await worker.stop();
    }
  }, 120_000);

  it('resumes a continued turn after its worker is killed mid-tool, and never runs that call again', async () => {
    const provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL, TEST_MODEL_2],
        mode: 'match',
        replies: [
          { match: { lastUserContains: task(2) }, toolCalls: [{ id: 'k-2', name: 'sleep', arguments: { ms: 4000 } }] },
          { match: { lastUserContains: task(2) }, text: 'after the kill' },
        ],
      },
    });
    const runLog = join(dir, 'killed-sleep-runs.log');
    const config: WorkerProcessConfig = {
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      taskQueue: `eval-continue-kill-${process.pid}-${Date.now()}`,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath: h.storePath,
      providerBaseURL: provider.url,
      runLog,
      idleTimeoutMs: 5_000,
    };
    let child = await startChildWorker(config);
    try {
      const { targets } = await planEvalTargets((id) => h.store.read(id), ['cont-2'], {
        runId: 'continued-killed',
        at: 'turn',
      });
      const handle = await h.client.workflow.start('evalRun', {
        taskQueue: config.taskQueue,
        workflowId: evalWorkflowId('continued-killed'),
        args: [
          {
            runId: 'continued-killed',
            change: { model: TEST_MODEL_2, addTools: [sleepSchema] },
            targets,
            concurrency: 1,
            at: Date.now(),
            mode: 'continue',
            allowTools: ['sleep'],
          } satisfies EvalRunInput,
        ],
      });
      // The non-idempotent sleep has started: kill the worker while it runs.
      const deadline = Date.now() + 60_000;
      while (!(existsSync(runLog) && readFileSync(runLog, 'utf8').includes('k-2')) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      child.kill('SIGKILL');
      await child.exited;
      child = await startChildWorker(config);
      const result = (await handle.result()) as EvalRunResult;
      expect(result.outcomes.map((o) => o.status)).toEqual(['answered']);
      expect(result.outcomes[0]?.steps).toEqual({ source: 2, candidate: 2 });
      // It ran once; its outcome is unknown, as a session would say, and the turn went on.
      expect(readFileSync(runLog, 'utf8').trim()).toBe('k-2');
      const events = await h.store.read(result.outcomes[0]?.target.evalSessionId ?? '');
      expect(events.findLast((e) => e.type === 'tool/result')).toMatchObject({ callId: 'k-2', status: 'interrupted' });
      expect(events.findLast((e) => e.type === 'assistant/message')).toMatchObject({ content: 'after the kill' });
      expect(
        (await auditSession({ store: h.store, sessionId: result.outcomes[0]?.target.evalSessionId ?? '' })).failures,
      ).toEqual([]);
    } finally {
      await child.stop();
      await provider.close();
    }
  }, 120_000);
});
