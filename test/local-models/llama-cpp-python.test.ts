// The real stack against a real local inference server: llama-cpp-python's `python -m llama_cpp.server`
// with SmolLM2-135M-Instruct, installed by the test setup. `dh worker` and `dh run` as a user runs them,
// keyless, greedy (DH_TEMPERATURE=0): the worker learns the served models, a turn streams and audits clean,
// a length cut, an interrupt mid-stream, the server killed mid-stream and restarted, a context overflow that
// compacts and carries on (this server refuses a streamed over-long prompt with an empty 200), and a tool call
// whose result goes back to the model (llama-cpp-python calls tools automatically only on non-streamed requests).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import {
  dh,
  sessionIdOf,
  show,
  spawnDh,
  startDhWorker,
  testStackEnv,
  type DhProcess,
  type TestStackEnv,
} from '../cli/live-harness.js';
import { LOCAL_MODEL, startLlamaServer, type LlamaServer } from '../helpers/llama-server.js';

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** A prompt the model answers at length whatever it makes of it (greedy decoding counts on and on). */
const COUNTING = 'Count from 1 to 1000, separated by commas.';

interface LocalStack {
  readonly server: LlamaServer;
  readonly stack: TestStackEnv;
  readonly worker: DhProcess;
  events(sessionId: string): Promise<SessionEvent[]>;
  stop(): Promise<void>;
}

/** A llama-cpp-python server and a `dh worker` on it: keyless, greedy, `extra` for the rest. */
async function startLocalStack(
  server: { nCtx: number; chatFormat?: string },
  extra: NodeJS.ProcessEnv,
): Promise<LocalStack> {
  const llama = await startLlamaServer(server);
  const stack = testStackEnv(llama.baseURL, {
    DH_PROVIDER: 'llamacpp',
    DH_MODEL: LOCAL_MODEL,
    DH_API_KEY_ENV: undefined,
    DH_LIVE_TEST_KEY: undefined,
    DH_TEMPERATURE: '0',
    ...extra,
  });
  let worker: DhProcess;
  try {
    worker = await startDhWorker(stack.env);
  } catch (error) {
    await llama.stop();
    stack.cleanup();
    throw error;
  }
  return {
    server: llama,
    stack,
    worker,
    events: async (sessionId) => {
      const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
      try {
        return await store.read(sessionId);
      } finally {
        await store.close();
      }
    },
    stop: async () => {
      await worker.stop();
      await llama.stop();
      stack.cleanup();
    },
  };
}

/** Resolves once `run` has printed `chars` characters of the answer. */
async function streamed(run: DhProcess, chars: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (run.stdout().length < chars) {
    if (Date.now() > deadline) throw new Error(`no ${chars} characters of answer within 2 min:\n${run.stdout()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function expectAuditClean(local: LocalStack, sessionId: string): Promise<void> {
  const audit = await dh(['audit', sessionId], local.stack.env, 120_000);
  expect(audit.code, `${show(audit)}\n--- server ---\n${local.server.output().slice(-3000)}`).toBe(0);
}

describe('llama-cpp-python: streaming turns', () => {
  let local: LocalStack;
  beforeAll(async () => {
    // The server reports no context window, so it is configured, as docs/local-models.md says.
    // 1,500 tokens of counting take seconds: long enough to interrupt, or to kill the server, mid-stream.
    local = await startLocalStack({ nCtx: 2048 }, { DH_CONTEXT_WINDOW: '2048', DH_MAX_TOKENS: '1500' });
  }, 300_000);
  afterAll(() => local?.stop());

  it('the worker learnt the models the server serves (GET /v1/models: its alias, no window)', () => {
    expect(local.worker.stderr()).toContain(`models served (GET ${local.server.baseURL}/models): ${LOCAL_MODEL}"`);
  });

  it('a turn streams, completes and audits clean (this server streams no usage)', async () => {
    const run = spawnDh(['run', 'Say hello in one short sentence.'], local.stack.env);
    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    expect(r.stdoutTimes.length, 'the answer arrived in several pieces').toBeGreaterThan(1);
    const sessionId = /dh: session (\S+) /.exec(r.stderr)?.[1] as string;
    const events = await local.events(sessionId);
    expect(ofType(events, 'request/header')[0]?.header).toMatchObject({
      contextWindow: 2048,
      config: { provider: 'llamacpp', model: LOCAL_MODEL, temperature: 0, maxTokens: 1500, includeUsage: true },
    });
    const [answer] = ofType(events, 'assistant/message');
    expect(answer?.content?.trim()).toBe(r.stdout.trim());
    // llama-cpp-python ignores stream_options.include_usage: a streamed answer carries no token counts.
    expect(answer?.usage).toBeUndefined();
    await expectAuditClean(local, sessionId);
  }, 300_000);

  it('an answer cut at DH_MAX_TOKENS ends the turn truncated, exit 3', async () => {
    const r = await spawnDh(['run', COUNTING], local.stack.env).result;
    expect(r.code, show(r)).toBe(ExitCode.TurnNotCompleted);
    expect(r.stderr).toMatch(/turn 1 ended: truncated — ANSWER_TRUNCATED/);
    const sessionId = /dh: session (\S+) /.exec(r.stderr)?.[1] as string;
    const [answer] = ofType(await local.events(sessionId), 'assistant/message');
    expect(answer).toMatchObject({ finishReason: 'length' });
    await expectAuditClean(local, sessionId);
  }, 300_000);

  it('Ctrl-C mid-stream interrupts the turn (aborted, exit 3); the partial answer is logged; the next turn runs', async () => {
    const run = spawnDh(['run', COUNTING], local.stack.env);
    const sessionId = await sessionIdOf(run);
    await streamed(run, 100);
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, show(r)).toBe(ExitCode.TurnNotCompleted);
    expect(r.stderr).toMatch(/turn 1 ended: aborted/);
    const [answer] = ofType(await local.events(sessionId), 'assistant/message');
    expect(answer).toMatchObject({ interrupted: true });
    expect((answer?.content ?? '').length).toBeGreaterThan(0);

    const next = await spawnDh(['run', '--session', sessionId, 'Say hello.'], local.stack.env).result;
    expect(next.code, show(next)).toBe(0);
    await expectAuditClean(local, sessionId);
  }, 300_000);

  it('the server killed mid-stream and restarted: the step is retried (the cause shown live) and the turn ends once', async () => {
    const run = spawnDh(['run', COUNTING], local.stack.env);
    const sessionId = await sessionIdOf(run);
    await streamed(run, 100);
    await local.server.kill();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await local.server.restart();
    const r = await run.result;
    // The retried step streams the whole answer again and is cut at the limit as before.
    expect(r.code, show(r)).toBe(ExitCode.TurnNotCompleted);
    expect(r.stderr).toMatch(/turn 1 ended: truncated/);
    expect(r.stderr, show(r)).toMatch(/retry|attempt/i);
    const events = await local.events(sessionId);
    expect(ofType(events, 'request/sent')).toHaveLength(1);
    expect(ofType(events, 'assistant/message')).toMatchObject([{ finishReason: 'length' }]);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['truncated']);
    await expectAuditClean(local, sessionId);
  }, 300_000);
});

describe('llama-cpp-python: a context overflow', () => {
  let local: LocalStack;
  beforeAll(async () => {
    // No DH_CONTEXT_WINDOW: dh assumes a large window, so only the server's refusal says the log outgrew
    // its 1,024 tokens.
    local = await startLocalStack({ nCtx: 1024 }, { DH_MAX_TOKENS: '24' });
  }, 300_000);
  afterAll(() => local?.stop());

  it('an over-long request is refused, the session compacts (the oldest turn gives way) and the turn carries on', async () => {
    // ~330 tokens a note: two fit in 1,024, three do not.
    const note = (name: string) => `Note ${name}: ${'red green blue yellow '.repeat(80)}Reply OK.`;
    const first = await spawnDh(['run', note('A')], local.stack.env).result;
    expect([0, 3], show(first)).toContain(first.code);
    const sessionId = /dh: session (\S+) /.exec(first.stderr)?.[1] as string;
    for (const name of ['B', 'C']) {
      const r = await spawnDh(['run', '--session', sessionId, note(name)], local.stack.env).result;
      expect([0, 3], show(r)).toContain(r.code);
      expect(r.stderr).not.toMatch(/ended: error/);
    }
    const events = await local.events(sessionId);
    const errors = ofType(events, 'step/end').filter((e) => e.error !== undefined);
    expect(errors.map((e) => [e.turn, e.step, e.error?.code])).toEqual([[3, 1, 'CONTEXT_LENGTH_EXCEEDED']]);
    expect(ofType(events, 'compact/start').map((e) => e.trigger)).toEqual(['overflow']);
    expect(ofType(events, 'compact/refused')).toHaveLength(1);
    expect(ofType(events, 'compact/end').map((e) => e.outcome)).toEqual(['applied']);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).not.toContain('error');
    expect(
      ofType(events, 'assistant/message')
        .filter((e) => e.turn === 3)
        .map((e) => e.step),
    ).toEqual([2]);
    await expectAuditClean(local, sessionId);
  }, 300_000);
});

const LIST_DIR_CHOICE = { type: 'function', function: { name: 'list_dir' } };

describe('llama-cpp-python: a tool call', () => {
  let local: LocalStack;
  beforeAll(async () => {
    local = await startLocalStack(
      { nCtx: 4096, chatFormat: 'chatml-function-calling' },
      {
        DH_CONTEXT_WINDOW: '4096',
        DH_MAX_TOKENS: '128',
        DH_STREAM: 'off',
        // The tool is named: with "auto", llama-cpp-python's chatml-function-calling lets a 135M model chain
        // calls inside one completion until the context overflows (which model output triggers it shifts with
        // every change to the tools' descriptions). A named tool is one grammar-bound call per request.
        DH_EXTRA_BODY: JSON.stringify({ tool_choice: LIST_DIR_CHOICE }),
      },
    );
  }, 300_000);
  afterAll(() => local?.stop());

  it('the model calls a built-in tool, its result goes back, and the server answers that request', async () => {
    const run = spawnDh(['run', 'Use the list_dir tool to list the files in the workspace.'], local.stack.env);
    const sessionId = await sessionIdOf(run);
    // The named tool is called again and again (until the step limit): stop the turn once the request that
    // carries a result has been answered.
    let events: SessionEvent[] = [];
    const deadline = Date.now() + 240_000;
    while (ofType(events, 'assistant/message').filter((e) => e.step >= 2).length === 0) {
      if (Date.now() > deadline) {
        const log = events.map((e) => `${e.seq} ${e.type} ${JSON.stringify(e).slice(0, 300)}`).join('\n');
        // The `dh run` would wait for its turn after this process is gone.
        run.kill('SIGKILL');
        throw new Error(`no answer to the step after a tool call:\n${run.stderr()}\n${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
      // `dh run` prints the id once the followup is accepted; on a loaded machine the worker may not have
      // opened the session's log yet.
      events = await local.events(sessionId).catch((error: unknown) => {
        if ((error as { code?: unknown }).code === 'SESSION_NOT_FOUND') return [];
        throw error;
      });
    }
    const interrupted = await dh(['interrupt', sessionId], local.stack.env);
    expect(interrupted.code, show(interrupted)).toBe(0);
    const r = await run.result;
    events = await local.events(sessionId);

    const [call] = ofType(events, 'assistant/message').flatMap((e) => e.toolCalls);
    expect(call?.name, show(r)).toBe('list_dir');
    const [result] = ofType(events, 'tool/result');
    expect(result).toMatchObject({ callId: call?.id, name: 'list_dir' });
    expect(r.stderr).toMatch(/→ list_dir/);
    // Step 2's request was built after the result (so it carries it: the audit re-derives it), and answered.
    const step2 = ofType(events, 'request/sent').find((e) => e.turn === 1 && e.step === 2);
    expect(step2?.seq).toBeGreaterThan(result?.seq ?? Infinity);
    expect(ofType(events, 'request/header')[0]?.header.config).toMatchObject({
      stream: false,
      extraBody: { tool_choice: LIST_DIR_CHOICE },
      nullContentAs: 'empty-string',
    });
    expect(
      ofType(events, 'turn/end').map((e) => e.reason),
      show(r),
    ).not.toContain('error');
    await expectAuditClean(local, sessionId);
  }, 300_000);
});
