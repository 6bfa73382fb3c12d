// The tool policy as the tool step runs it: gather the call's path facts, decide by the rules (and the
// session's remembered rules), and put what is still an ask to the evaluator plugins, whose failures and
// doubts stay an ask. The result is the `policy/verdict` the step logs before acting on it.
import type { PolicyRule } from '../core/index.js';
import type { StepContext, ToolCallView } from '../plugins/contracts.js';
import { consultEvaluators, type PolicyEvaluator, type VerdictDraft } from './consult-evaluators.js';
import { decideCall } from './decide-call.js';
import type { Policy } from './policy-file.js';
import { fixedPolicy, type PolicySource } from './policy-reloader.js';
import { gatherPathFacts, parseArguments } from './policy-paths.js';
import { verdictInputsDigest } from './verdict-inputs.js';

export { policyEvaluators, type PolicyEvaluator, type VerdictDraft } from './consult-evaluators.js';

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
      return consultEvaluators({ fromRules, evaluators, call, question: { ...context, rules }, policy });
    },
  };
}
