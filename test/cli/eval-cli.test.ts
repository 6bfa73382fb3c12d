// `dh eval` as a user runs it: a `dh worker` child process on a scripted provider records three sessions with
// tool calls, then `dh eval` sends their steps again with another model and prints the report (table, JSON, and
// again with --show); the eval logs audit clean with `dh audit`, `dh ls` leaves them out unless asked, its
// progress names no money before any moved, a step no price bounds names the serving worker's DH_PRICING,
// and bad input is a usage error that says what to fix.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { SessionClient } from '../../src/client/session-client.js';
import { countSentSteps } from '../../src/eval/count-sent-steps.js';
import type { EvalReport } from '../../src/eval/eval-report.js';
import { evalProgressQuery, evalWorkflowId } from '../../src/shared/eval-contracts.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { spawnDh } from './live-harness.js';
import { cleanEnv, describeRun, runDh, startDhWorker, tempHome, type DhWorker } from './operator-cli.js';

const OLD = 'eval-old-model';
const NEW = 'eval-new-model';
const ids = ['cli-eval-a', 'cli-eval-b', 'cli-eval-c'];

describe('dh eval on a real worker', () => {
  const home = tempHome('dh-cli-eval-');
  const taskQueue = `dh-cli-eval-${process.pid}-${Date.now()}`;
  let provider: ScriptedProvider;
  let worker: DhWorker | undefined;
  let store: SqliteSessionStore;
  let connection: Connection;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: {
        models: [OLD, NEW],
        mode: 'match',
        replies: ids.flatMap((id) => [
          {
            match: { lastUserContains: id },
            toolCalls: [{ id: `c-${id}`, name: 'read_file', arguments: { path: 'README.md' } }],
          },
          { match: { lastUserContains: id }, text: `read it for ${id}` },
        ]),
        default: { text: 'the new model answers' },
      },
    });
    env = cleanEnv({
      DH_HOME: home.home,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: taskQueue,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: OLD,
      DH_API_KEY_ENV: 'DH_EVAL_TEST_KEY',
      DH_EVAL_TEST_KEY: 'sk-test-not-a-real-key',
      DH_SHELL_SANDBOX: 'none',
      DH_LOG_LEVEL: 'warn',
    });
    store = SqliteSessionStore.open(join(home.home, 'sessions.db'));
    worker = await startDhWorker(env, join(home.home, 'worker.ready'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const sessions = new SessionClient(new Client({ connection, namespace: inject('temporalNamespace') }), {
      taskQueue,
    });
    for (const id of ids) {
      await sessions.open(id);
      await sessions.followup(id, `${id}: read the README`);
    }
    for (const id of ids) await waitForTurnEnd(id);
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await connection?.close();
    await store?.close();
    await provider?.close();
    home.cleanup();
  });

  async function waitForTurnEnd(sessionId: string): Promise<SessionEvent[]> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const events = await store.read(sessionId).catch(() => []);
      if (events.some((e) => e.type === 'turn/end')) return events;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the turn of ${sessionId} never ended\n${worker?.output() ?? ''}`);
  }

  it('evaluates the sessions with another model and prints the report', async () => {
    const run = await runDh(['eval', ...ids, '--model', NEW, '--run-id', 'cli-run', '--json'], env, 120_000);
    expect(run.code, describeRun(run)).toBe(0);
    expect(run.stderr).toContain('dh: eval cli-run: 6 steps of 3 session(s), change: model=eval-new-model');
    expect(run.stderr).toMatch(/6\/6 steps done \(6 answered, 0 skipped, 0 failed\)/);
    const report = JSON.parse(run.stdout) as EvalReport;
    expect(report.counts).toEqual({ steps: 6, answered: 6, skipped: 0, failed: 0 });
    expect(report.beyondTheChange).toBe(0);
    // The recorded first steps called read_file; the new model answers in text: every call is missing.
    const first = report.steps.filter((s) => s.outcome.target.step === 1);
    expect(first.map((s) => s.diff?.toolCalls.map((c) => c.verdict))).toEqual(ids.map(() => ['missing']));
    expect(report.steps.every((s) => s.candidate?.content === 'the new model answers')).toBe(true);

    // The same report again, as a table, from the finished run.
    const shown = await runDh(['eval', '--show', 'cli-run'], env);
    expect(shown.code, describeRun(shown)).toBe(0);
    expect(shown.stdout).toContain('eval cli-run: model=eval-new-model');
    expect(shown.stdout).toContain(
      'requests: every candidate equals its recorded request but for the change (6 checked)',
    );
    expect(shown.stdout).toMatch(/^SESSION\s+STEP\s+TEXT\s+TOOL CALLS\s+FINISH/m);
    expect(shown.stdout).toMatch(/^cli-eval-a\s+1\.1\s+[\d.]+\s+0:missing\s+tool_calls→stop/m);
    expect(shown.stdout).toContain('judge structural: mean');

    // Each candidate is a log of its own that `dh audit` re-derives.
    const evalLog = report.steps[0]?.outcome.target.evalSessionId ?? '';
    expect(evalLog).toMatch(/^eval\.cli-run\.cli-eval-a\.s\d+$/);
    const audit = await runDh(['audit', evalLog], env);
    expect(audit.code, describeRun(audit)).toBe(0);

    // `dh ls` lists the sessions, not the six eval logs, unless asked.
    const ls = await runDh(['ls', '--json'], env);
    expect((JSON.parse(ls.stdout) as { sessionId: string }[]).map((s) => s.sessionId).sort()).toEqual([...ids].sort());
    const all = await runDh(['ls', '--json', '--evals'], env);
    expect(
      (JSON.parse(all.stdout) as { sessionId: string }[]).filter((s) => s.sessionId.startsWith('eval.cli-run.')),
    ).toHaveLength(6);
  }, 180_000);

  it('chooses the sessions by age or by a Temporal visibility query, and runs detached', async () => {
    // --since leaves out the eval logs the first run wrote (they are newer than the sessions).
    const detached = await runDh(['eval', '--since', '1h', '--model', NEW, '--run-id', 'since-run', '--detach'], env);
    expect(detached.code, describeRun(detached)).toBe(0);
    expect(detached.stdout).toBe('since-run\n');
    expect(detached.stderr).toContain('6 steps of 3 session(s)');
    const shown = await runDh(['eval', '--show', 'since-run', '--json'], env, 120_000);
    expect(shown.code, describeRun(shown)).toBe(0);
    expect((JSON.parse(shown.stdout) as EvalReport).counts.answered).toBe(6);

    // The sessions' workflows on this test's task queue that are idle, as Temporal's visibility lists them (it
    // catches up with the search attributes a moment after they are set).
    const query = `TaskQueue = "${taskQueue}" AND DhSessionStatus = "idle"`;
    let found: Awaited<ReturnType<typeof runDh>> | undefined;
    for (let i = 0; i < 40; i++) {
      found = await runDh(
        ['eval', '--query', query, '--at', 'turn', '--model', NEW, '--run-id', `query-run-${i}`, '--json'],
        env,
        120_000,
      );
      if (found.code === 0 && (JSON.parse(found.stdout) as EvalReport).counts.steps === 3) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(found?.code, found && describeRun(found)).toBe(0);
    const report = JSON.parse(found?.stdout ?? '{}') as EvalReport;
    expect(report.steps.map((s) => s.outcome.target.sourceSessionId).sort()).toEqual([...ids].sort());
    expect(report.steps.every((s) => s.outcome.target.step === 1)).toBe(true);

    const bad = await runDh(['eval', '--query', 'this is not a query', '--model', NEW], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^dh: --query: /m);
  }, 180_000);

  it('shows the steps it sent as in flight, and no money before any moved', async () => {
    // A worker on a provider that holds every candidate's stream until released: the run hands out four steps
    // (--concurrency 4), and each is sent and held there.
    const held = await startScriptedProvider({
      script: {
        models: [OLD, NEW],
        replies: [],
        default: { text: 'a held candidate', hold: { afterChunks: 0, key: 'go' } },
      },
    });
    const queue = `${taskQueue}-held`;
    const holding = await startDhWorker(
      { ...env, DH_TASK_QUEUE: queue, DH_BASE_URL: held.url },
      join(home.home, 'held-worker.ready'),
    );
    try {
      const run = spawnDh(['eval', ...ids, '--model', NEW, '--task-queue', queue, '--run-id', 'held', '--json'], env);
      // Nothing was answered, so nothing was spent: no "$0.000000 spent" as if money had moved.
      await run.waitFor(/^dh: 0\/6 steps done \(0 answered, 0 skipped, 0 failed\), 4 in flight$/m, 120_000);
      // The workflow knows only which steps it handed out; their eval logs say they were sent.
      const client = new Client({ connection, namespace: inject('temporalNamespace') });
      const progress = await client.workflow.getHandle(evalWorkflowId('held')).query(evalProgressQuery);
      expect(progress).toMatchObject({ total: 6, done: 0, running: 4, spentUsd: 0, unpriced: 0 });
      expect(await countSentSteps((id, fromSeq) => store.read(id, fromSeq), progress.runningSteps)).toBe(4);
      held.release('go');
      const r = await run.result;
      expect(r.code, r.stderr).toBe(0);
      // The serving worker has no price for the model: the cost is unknown, not $0.
      expect(r.stderr).toMatch(
        /^dh: 6\/6 steps done \(6 answered, 0 skipped, 0 failed\), cost unknown for 6 \(no price for the model on the serving worker\)$/m,
      );
      expect(r.stderr).not.toContain('$0.000000');
    } finally {
      await holding.stop();
      await held.close();
    }
  }, 240_000);

  it('skips a step the budget cannot price, naming the DH_PRICING of the worker that serves the run', async () => {
    const run = await runDh(
      ['eval', ids[0] ?? '', '--model', NEW, '--budget', '1', '--run-id', 'no-price', '--json'],
      env,
    );
    expect(run.code, describeRun(run)).toBe(0);
    const report = JSON.parse(run.stdout) as EvalReport;
    expect(report.steps.map((s) => s.outcome.reason)).toEqual([
      `a budget is set but "scripted/${NEW}" has no price on the worker that serves this eval ` +
        `(the worker polling task queue "${taskQueue}-model"): add it to that worker's DH_PRICING and restart it`,
      `a budget is set but "scripted/${NEW}" has no price on the worker that serves this eval ` +
        `(the worker polling task queue "${taskQueue}-model"): add it to that worker's DH_PRICING and restart it`,
    ]);
    expect(run.stderr).not.toContain('$0.000000');
  }, 120_000);

  it('says what to fix when the input is wrong', async () => {
    const none = await runDh(['eval', '--model', NEW], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('name the sessions to evaluate, or choose them with --query or --since');

    const empty = await runDh(['eval', ids[0] ?? ''], env);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('the change is empty');

    const stray = await runDh(['eval', ids[0] ?? '', '--model', NEW, '--allow-tool', 'shell'], env);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--allow-tool and --max-steps go with --continue');

    const file = join(home.home, 'change.json');
    writeFileSync(file, '{\n  "model": "x",\n  "temperature": 0.2,,\n}\n');
    const broken = await runDh(['eval', ids[0] ?? '', '--header-change', file], env);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(
      new RegExp(`^dh: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:\\d+: not valid JSON or YAML`, 'm'),
    );

    writeFileSync(file, JSON.stringify({ temperature: 7 }));
    const invalid = await runDh(['eval', ids[0] ?? '', '--header-change', file], env);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain(`${file}: temperature:`);

    const missing = await runDh(['eval', 'no-such-session', '--model', NEW], env);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('no session "no-such-session" in the store');

    const unknownRun = await runDh(['eval', '--show', 'never-ran'], env);
    expect(unknownRun.code).toBe(1);
    expect(unknownRun.stderr).toContain('no eval run "never-ran"');
  }, 120_000);
});
