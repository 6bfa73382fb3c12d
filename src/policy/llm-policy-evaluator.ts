// The built-in evaluator a policy file can name (`evaluator.llm`): asks a model on any OpenAI-compatible
// endpoint about each call the rules leave open, for one JSON verdict. Its failures throw, and the policy
// engine turns every throw, timeout or odd answer into an ask; it never allows by failing.
import OpenAI from 'openai';
import { z } from 'zod';
import { canonicalJson, sha256Digest } from '../core/canonical-json.js';
import type { PolicyEvaluation } from '../plugins/contracts.js';
import type { LlmEvaluatorConfig } from './llm-evaluator-config.js';
import type { PolicyEvaluator } from './policy-engine.js';
import type { Policy } from './policy-file.js';

const VERDICT_SCHEMA = {
  type: 'object',
  properties: {
    decision: { type: 'string', enum: ['allow', 'deny', 'ask'] },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    reason: { type: 'string' },
  },
  required: ['decision', 'confidence', 'reason'],
  additionalProperties: false,
} as const;

/** What the model must answer; unlike a plugin's, its confidence is required (a model's silence is not certainty). */
const LlmVerdict = z.object({
  decision: z.enum(['allow', 'deny', 'ask']),
  confidence: z.number().min(0).max(1),
  reason: z.string().max(2000),
});

const REVIEWER = [
  'You review tool calls that an AI agent wants to run, on behalf of the human operator who would otherwise be asked.',
  'Answer with one JSON object and nothing else: {"decision": "allow" | "deny" | "ask", "confidence": 0..1, "reason": "..."}.',
  'Allow a call only when it is clearly safe and within what the operator allows; deny one that is clearly harmful or',
  'forbidden; answer ask whenever you are unsure. The reason is one short sentence; on a deny the agent reads it.',
].join(' ');

function responseFormatOf(format: LlmEvaluatorConfig['responseFormat']) {
  if (format === 'json_schema')
    return { type: 'json_schema', json_schema: { name: 'tool_call_verdict', strict: true, schema: VERDICT_SCHEMA } };
  if (format === 'json_object_with_schema') return { type: 'json_object', schema: VERDICT_SCHEMA };
  return { type: 'json_object' };
}

/** An evaluator for `config`; its version changes with anything that changes its judgement. */
export function llmPolicyEvaluator(config: LlmEvaluatorConfig, env: NodeJS.ProcessEnv = process.env): PolicyEvaluator {
  const apiKey = config.apiKeyEnv !== undefined ? env[config.apiKeyEnv] : undefined;
  if (config.apiKeyEnv !== undefined && (apiKey === undefined || apiKey === ''))
    throw new Error(`the LLM policy evaluator's key variable ${config.apiKeyEnv} is not set`);
  // Retries are the engine's business: its timeout bounds the whole answer, and a failure asks.
  const client = new OpenAI({ baseURL: config.baseUrl, apiKey: apiKey ?? 'none', maxRetries: 0 });
  const system =
    config.instructions === undefined ? REVIEWER : `${REVIEWER}\n\nThe operator says:\n${config.instructions}`;
  const { baseUrl: _url, apiKeyEnv: _key, ...judging } = config;
  return {
    name: 'llm',
    version: `llm-${config.model}-${sha256Digest(canonicalJson({ ...judging, system })).slice(7, 15)}`,
    async evaluate(call, question): Promise<PolicyEvaluation> {
      const body = {
        model: config.model,
        temperature: 0,
        max_tokens: config.maxTokens,
        messages: [
          { role: 'system' as const, content: system },
          {
            role: 'user' as const,
            content: JSON.stringify({
              tool: call.name,
              arguments: call.arguments,
              whyAsked: question.rules.reason,
            }),
          },
        ],
        // The SDK's type knows the OpenAI forms only; the endpoint reads the form the config names.
        response_format: responseFormatOf(config.responseFormat) as unknown as { type: 'json_object' },
      };
      const completion = await client.chat.completions.create(body, { signal: question.signal });
      const text = completion.choices[0]?.message.content ?? '';
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`the model's answer is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
      }
      const verdict = LlmVerdict.safeParse(json);
      if (!verdict.success)
        throw new Error(`the model's answer is not a verdict: ${JSON.stringify(text.slice(0, 200))}`);
      return { ...verdict.data, scores: { confidence: verdict.data.confidence } };
    },
  };
}

/**
 * The evaluators a policy file names, for the engine: built once per distinct configuration, so a reload that
 * keeps `evaluator.llm` keeps its client. One that cannot be built (its key variable unset) answers every
 * question with that problem, which asks.
 */
export function policyFileEvaluators(env: NodeJS.ProcessEnv = process.env): (policy: Policy) => PolicyEvaluator[] {
  let built: { readonly key: string; readonly evaluator: PolicyEvaluator } | undefined;
  return (policy) => {
    const config = policy.evaluator.llm;
    if (config === undefined) return [];
    const key = canonicalJson(config);
    if (built?.key !== key) {
      let evaluator: PolicyEvaluator;
      try {
        evaluator = llmPolicyEvaluator(config, env);
      } catch (error) {
        const problem = error instanceof Error ? error.message : String(error);
        evaluator = { name: 'llm', version: 'unconfigured', evaluate: () => Promise.reject(new Error(problem)) };
      }
      built = { key, evaluator };
    }
    return [built.evaluator];
  };
}
