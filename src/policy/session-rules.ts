// "Approve (or deny) and remember": the rule a remembered decision adds to its session, logged with the
// decision. It answers later asks only; what the policy file allows or denies stays as the file says.
import type { EventDraft, PolicyRule, ToolCall } from '../core/index.js';
import { SESSION_RULE_PREFIX } from './policy-file.js';
import { parseArguments } from './policy-paths.js';

export type RememberScope = 'tool' | 'call';

/** The `policy/rule` draft for a remembered decision; null when there is nothing to remember by. */
export function rememberedRuleDraft(input: {
  readonly call: ToolCall;
  readonly decision: 'approve' | 'deny';
  readonly scope: RememberScope;
  readonly by?: string;
  readonly turn: number;
  readonly step: number;
  readonly at: number;
}): Extract<EventDraft, { type: 'policy/rule' }> | null {
  const { call, decision, scope, by } = input;
  const args = parseArguments(call.arguments);
  // Arguments that are not JSON cannot be matched again: there is no "same call" to remember.
  if (scope === 'call' && args === undefined) return null;
  const verb = decision === 'approve' ? 'approved' : 'denied';
  const rule: PolicyRule = {
    id: `${SESSION_RULE_PREFIX}${call.id}`,
    tool: call.name,
    ...(scope === 'call' ? { when: [{ arg: '', equals: args }] } : {}),
    outcome: decision === 'approve' ? 'allow' : 'deny',
    reason: `${by ?? 'the approver'} ${verb} ${scope === 'call' ? 'this exact call' : `${call.name} calls`} for this session`,
  };
  return {
    type: 'policy/rule',
    at: input.at,
    turn: input.turn,
    step: input.step,
    callId: call.id,
    rule,
    ...(by !== undefined ? { by } : {}),
  };
}
