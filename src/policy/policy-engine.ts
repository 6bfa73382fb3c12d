// The tool policy as the tool step runs it: gather the call's path facts, decide by the rules (and the
// session's remembered rules), and put what is still an ask to the evaluator plugins, whose failures and
// doubts stay an ask. The result is the `policy/verdict` the step logs before acting on it.
import { z } from 'zod';
import type { EventDraft, PolicyRule } from '../core/index.js';
import type { PolicyEvaluation, StepContext, ToolCallView } from '../plugins/contracts.js';
import type { Plugin } from '../plugins/plugin.js';
import { decideCall } from './decide-call.js';
import type { Policy } from './policy-file.js';
import { fixedPolicy, type PolicySource } from './policy-reloader.js';
import { gatherPathFacts, parseArguments } from './policy-paths.js';
import { verdictInputsDigest } from './verdict-inputs.js';

export type VerdictDraft = Extract<EventDraft, { type: 'policy/verdict' }>;

export interface PolicyEvaluator {
  readonly name: string;
  readonly version: string;
  readonly evaluate: NonNullable<Plugin['policy']>;
}

export interface PolicyEngine {
  /** The verdict on one call; never throws for an evaluator's sake. */
  judge(input: {
    readonly call: ToolCallView;
    readonly sessionRules: readonly PolicyRule[];
    readonly workspace: string;
    readonly context: StepContext;
    readonly at: number;
  }): Promise<VerdictDraft>;
}

const Evaluation = z.strictObject({
  decision: z.enum(['allow', 'deny', 'ask']),
  reason: z.string().max(2000).optional(),
  scores: z.record(z.string().max(100), z.number().finite()).optional(),
  confidence: z.number().min(0).max(1).optional(),
});

/** Evaluators are the plugins with a `policy` hook, in plugin order. */
export function policyEvaluators(plugins: readonly Plugin[]): PolicyEvaluator[] {
  return plugins.flatMap((plugin) => {
    const evaluate = plugin.policy?.bind(plugin);
    return evaluate ? [{ name: plugin.name, version: plugin.policyVersion ?? 'unversioned', evaluate }] : [];
  });
}

/** Judges by `policy`: one fixed policy, or a source that follows the file (see policy-reloader.ts). */
export function createPolicyEngine(
  policy: Policy | PolicySource,
  pluginEvaluators: readonly PolicyEvaluator[] = [],
  /** The evaluators a policy itself names (its `evaluator.llm`), after the plugins'. */
  evaluatorsOf: (policy: Policy) => readonly PolicyEvaluator[] = () => [],
): PolicyEngine {
  const source = 'current' in policy ? policy : fixedPolicy(policy);
  return {
    async judge({ call, sessionRules, workspace, context, at }) {
      const head = {
        type: 'policy/verdict' as const,
        at,
        turn: context.turn,
        step: context.step,
        callId: call.callId,
        name: call.name,
      };
      const now = await source.current();
      if (!now.ok)
        // Fail closed: no rule, remembered rule or evaluator can allow while the file does not load.
        return {
          ...head,
          inputs: verdictInputsDigest(call.name, call.arguments, {}),
          outcome: 'ask',
          by: 'default',
          version: now.version,
          reason: `the tool policy does not load, so every call asks until it does: ${now.problem}`.slice(0, 2000),
        };
      const { policy } = now;
      const evaluators = [...pluginEvaluators, ...evaluatorsOf(policy)];
      const args = parseArguments(call.arguments);
      const paths = await gatherPathFacts(policy.rules, call.name, args, workspace);
      const decision = decideCall(policy.rules, sessionRules, { name: call.name, args }, paths);
      const base = {
        ...head,
        inputs: verdictInputsDigest(call.name, call.arguments, paths),
        ...(Object.keys(paths).length > 0 ? { paths } : {}),
      };
      const fromRules: VerdictDraft = {
        ...base,
        outcome: decision.outcome,
        by: decision.by,
        ...(decision.rule !== undefined ? { rule: decision.rule } : {}),
        version: policy.version,
        reason: decision.reason,
      };
      if (decision.outcome !== 'ask' || decision.by === 'session-rule' || evaluators.length === 0) return fromRules;
      const rules = {
        by: decision.by,
        ...(decision.rule !== undefined ? { rule: decision.rule } : {}),
        reason: decision.reason,
      };
      const allowed: { evaluator: PolicyEvaluator; answer: PolicyEvaluation }[] = [];
      for (const evaluator of evaluators) {
        const asked = await ask(evaluator, call, { ...context, rules }, policy);
        const byEvaluator = { by: 'evaluator' as const, evaluator: evaluator.name, version: evaluator.version };
        if (!asked.ok) return { ...fromRules, ...byEvaluator, outcome: 'ask', escalated: asked.problem };
        const { answer } = asked;
        if (answer === undefined) continue;
        const scores = answer.scores !== undefined ? { scores: { ...answer.scores } } : {};
        const why = answer.reason !== undefined ? { reason: answer.reason } : {};
        if (answer.decision === 'ask') return { ...fromRules, ...byEvaluator, ...why, ...scores, outcome: 'ask' };
        if ((answer.confidence ?? 1) < policy.evaluator.minConfidence) {
          return {
            ...fromRules,
            ...byEvaluator,
            ...scores,
            outcome: 'ask',
            escalated:
              `it would ${answer.decision} with confidence ${answer.confidence ?? 1}, below ${policy.evaluator.minConfidence}${answer.reason !== undefined ? `: ${answer.reason}` : ''}`.slice(
                0,
                2000,
              ),
          };
        }
        if (answer.decision === 'deny')
          return {
            ...base,
            ...byEvaluator,
            ...scores,
            outcome: 'deny',
            reason: answer.reason ?? `${evaluator.name} denies this call`,
          };
        allowed.push({ evaluator, answer });
      }
      // No evaluator had an opinion: the rules' ask stands.
      const last = allowed.at(-1);
      if (last === undefined) return fromRules;
      // Every evaluator with an opinion allowed, sure enough.
      return {
        ...base,
        by: 'evaluator',
        evaluator: allowed.map((a) => a.evaluator.name).join('+'),
        version: allowed.map((a) => a.evaluator.version).join('+'),
        outcome: 'allow',
        reason: last.answer.reason ?? `${last.evaluator.name} allows this call`,
        ...(last.answer.scores !== undefined ? { scores: { ...last.answer.scores } } : {}),
      };
    },
  };
}

type Asked =
  | { readonly ok: true; readonly answer: PolicyEvaluation | undefined }
  | { readonly ok: false; readonly problem: string };

async function ask(
  evaluator: PolicyEvaluator,
  call: ToolCallView,
  question: Omit<Parameters<PolicyEvaluator['evaluate']>[1], 'signal'>,
  policy: Policy,
): Promise<Asked> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Asked>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ ok: false, problem: `${evaluator.name} did not answer within ${policy.evaluator.timeoutMs} ms` });
    }, policy.evaluator.timeoutMs);
  });
  const answered = (async (): Promise<Asked> => {
    try {
      const raw: unknown = await evaluator.evaluate({ ...call }, { ...question, signal: controller.signal });
      if (raw === undefined) return { ok: true, answer: undefined };
      const parsed = Evaluation.safeParse(raw);
      if (!parsed.success) return { ok: false, problem: `${evaluator.name} answered something other than a verdict` };
      return { ok: true, answer: parsed.data as PolicyEvaluation };
    } catch (error) {
      return {
        ok: false,
        problem: `${evaluator.name} failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 2000),
      };
    }
  })();
  try {
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
