// The policy file's `evaluator.llm` as a user writes it: validated with the path of a mistake, keyed by an
// environment variable (never the key), and an evaluator that cannot be built makes calls ask, never allow.
import { describe, expect, it } from 'vitest';
import { llmPolicyEvaluator, policyFileEvaluators } from '../../src/policy/llm-policy-evaluator.js';
import { createPolicyEngine } from '../../src/policy/policy-engine.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { policyProblem } from './policy-test-views.js';

const withLlm = (llm: unknown) => JSON.stringify({ rules: [], evaluator: { llm } });
const problem = policyProblem;

describe('evaluator.llm in the policy file', () => {
  it('takes a base URL, a model and defaults', () => {
    const policy = parsePolicy(withLlm({ baseUrl: 'https://api.deepseek.com', model: 'deepseek-chat' }), '/p.json');
    expect(policy.evaluator.llm).toEqual({
      baseUrl: 'https://api.deepseek.com',
      model: 'deepseek-chat',
      responseFormat: 'json_object',
      maxTokens: 300,
    });
  });

  it.each([
    [{ baseUrl: 'ftp://x', model: 'm' }, 'evaluator.llm.baseUrl'],
    [{ baseUrl: 'http://x/v1' }, 'evaluator.llm.model'],
    [{ baseUrl: 'http://x/v1', model: 'm', apiKey: 'sk-123' }, 'evaluator.llm'],
    [
      { baseUrl: 'http://x/v1', model: 'm', apiKeyEnv: 'sk-123' },
      'evaluator.llm.apiKeyEnv: an environment variable name',
    ],
    [{ baseUrl: 'http://x/v1', model: 'm', responseFormat: 'xml' }, 'evaluator.llm.responseFormat'],
  ])('names the mistake in %j', (llm, where) => {
    const message = problem(withLlm(llm));
    expect(message).toMatch(/^invalid tool policy in \/etc\/dh\/policy\.json: /);
    expect(message).toContain(where);
  });

  it('a key variable that is not set: the worker start refuses it, and a reload that names one asks', async () => {
    const llm = { baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKeyEnv: 'DH_TEST_UNSET_POLICY_KEY' };
    const policy = parsePolicy(JSON.stringify({ rules: [], evaluator: { llm } }), '/p.json');
    expect(() => llmPolicyEvaluator(policy.evaluator.llm!, {})).toThrow(
      "the LLM policy evaluator's key variable DH_TEST_UNSET_POLICY_KEY is not set",
    );
    const engine = createPolicyEngine(policy, [], policyFileEvaluators({}));
    const verdict = await engine.judge({
      call: { callId: 'c1', name: 'shell', arguments: '{"command":"ls"}' },
      sessionRules: [],
      workspace: '/tmp',
      context: { sessionId: 's', turn: 1, step: 1 } as never,
      at: 1,
    });
    expect(verdict).toMatchObject({ outcome: 'ask', evaluator: 'llm', version: 'unconfigured' });
    expect(verdict.escalated).toMatch(/key variable DH_TEST_UNSET_POLICY_KEY is not set/);
  });

  it('its version changes with what changes its judgement, not with where it is reached', () => {
    const base = { baseUrl: 'http://a/v1', model: 'm', responseFormat: 'json_object' as const, maxTokens: 300 };
    const v = (config: typeof base & { instructions?: string }) => llmPolicyEvaluator(config, {}).version;
    expect(v({ ...base, baseUrl: 'http://b/v1' })).toBe(v(base));
    expect(v({ ...base, instructions: 'no deletes' })).not.toBe(v(base));
    expect(v({ ...base, model: 'n' })).not.toBe(v(base));
  });
});
