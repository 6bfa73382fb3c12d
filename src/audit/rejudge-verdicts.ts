// `dh audit --rejudge`: every `policy/verdict` of a session judged again by today's policy file, with the
// facts the verdict recorded (its path facts, the session's remembered rules as they stood then). Names
// each verdict today's rules would decide differently, and any verdict whose inputs digest does not match
// the call the log holds (a verdict that does not judge the call it claims to). With evaluators given, a
// call the rules leave open is put to them again (online: a model's answer may change between runs).
import type { EventOf, PolicyOutcome, PolicyRule, SessionEvent, ToolCall } from '../core/index.js';
import { consultEvaluators, type PolicyEvaluator } from '../policy/consult-evaluators.js';
import { decideCall } from '../policy/decide-call.js';
import type { Policy } from '../policy/policy-file.js';
import { gatherPathFacts, parseArguments, pathFactKeys, type PathFacts } from '../policy/policy-paths.js';
import { verdictInputsDigest } from '../policy/verdict-inputs.js';

export type RejudgeStatus =
  /** Today's rules decide as the verdict did (for an evaluator's verdict: the rules still leave it to one). */
  | 'same'
  /** Today's rules decide otherwise. */
  | 'differs'
  /** The verdict's inputs digest does not match the logged call and its recorded facts. */
  | 'inputs-mismatch'
  /** Today's rules look at a path the verdict did not record, and no workspace was given to resolve it in. */
  | 'undetermined';

export interface RejudgedVerdict {
  readonly seq: number;
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly name: string;
  readonly recorded: {
    readonly outcome: PolicyOutcome;
    readonly by: string;
    readonly rule?: string;
    readonly evaluator?: string;
    readonly version: string;
  };
  /** What today's rules (and, when asked again, evaluators) decide (null: undetermined or inputs-mismatch). */
  readonly now: {
    readonly outcome: PolicyOutcome;
    readonly by: string;
    readonly rule?: string;
    readonly evaluator?: string;
  } | null;
  readonly status: RejudgeStatus;
  readonly note?: string;
}

export interface RejudgeReport {
  readonly sessionId: string;
  readonly policy: { readonly file: string; readonly version: string };
  readonly verdicts: readonly RejudgedVerdict[];
  readonly differs: number;
  readonly mismatched: number;
  readonly undetermined: number;
  /** No verdict differs or mismatches. */
  readonly ok: boolean;
}

export async function rejudgeVerdicts(input: {
  readonly sessionId: string;
  readonly events: readonly SessionEvent[];
  readonly policy: Policy;
  /** Resolves path facts today's rules need that a verdict did not record; without it those are undetermined. */
  readonly workspace?: string;
  /** Asked again about calls today's rules leave open; without them an evaluator's verdict is not re-run. */
  readonly evaluators?: readonly PolicyEvaluator[];
}): Promise<RejudgeReport> {
  const { events, policy } = input;
  const calls = new Map<string, ToolCall>();
  const sessionRules: PolicyRule[] = [];
  const verdicts: RejudgedVerdict[] = [];
  for (const event of events) {
    if (event.type === 'assistant/message') {
      for (const call of event.toolCalls) calls.set(`${event.turn}.${event.step}/${call.id}`, call);
    } else if (event.type === 'policy/rule') {
      sessionRules.push(event.rule);
    } else if (event.type === 'policy/verdict') {
      verdicts.push(
        await rejudgeOne(
          event,
          calls.get(`${event.turn}.${event.step}/${event.callId}`),
          [...sessionRules],
          policy,
          input.workspace,
          input.evaluators ?? [],
          events,
          input.sessionId,
        ),
      );
    }
  }
  const count = (status: RejudgeStatus) => verdicts.filter((v) => v.status === status).length;
  const differs = count('differs');
  const mismatched = count('inputs-mismatch');
  return {
    sessionId: input.sessionId,
    policy: { file: policy.file, version: policy.version },
    verdicts,
    differs,
    mismatched,
    undetermined: count('undetermined'),
    ok: differs === 0 && mismatched === 0,
  };
}

async function rejudgeOne(
  verdict: EventOf<'policy/verdict'>,
  call: ToolCall | undefined,
  sessionRules: readonly PolicyRule[],
  policy: Policy,
  workspace: string | undefined,
  evaluators: readonly PolicyEvaluator[],
  events: readonly SessionEvent[],
  sessionId: string,
): Promise<RejudgedVerdict> {
  const recorded = {
    outcome: verdict.outcome,
    by: verdict.by,
    ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
    ...(verdict.evaluator !== undefined ? { evaluator: verdict.evaluator } : {}),
    version: verdict.version,
  };
  const row = {
    seq: verdict.seq,
    turn: verdict.turn,
    step: verdict.step,
    callId: verdict.callId,
    name: verdict.name,
    recorded,
  };
  const paths: PathFacts = verdict.paths ?? {};
  if (call === undefined || call.name !== verdict.name)
    return { ...row, now: null, status: 'inputs-mismatch', note: 'the log holds no such call in that step' };
  if (verdictInputsDigest(call.name, call.arguments, paths) !== verdict.inputs)
    return { ...row, now: null, status: 'inputs-mismatch', note: 'the inputs digest does not match the logged call' };
  const args = parseArguments(call.arguments);
  // Facts today's rules need that the verdict did not record: resolved in the workspace now, if given.
  const missing = pathFactKeys(policy.rules, call.name).filter((key) => !(key in paths));
  let facts = paths;
  if (missing.length > 0) {
    if (workspace === undefined)
      return { ...row, now: null, status: 'undetermined', note: `path facts not recorded: ${missing.join(', ')}` };
    facts = { ...(await gatherPathFacts(policy.rules, call.name, args, workspace)), ...paths };
  }
  const decision = decideCall(policy.rules, sessionRules, { name: call.name, args }, facts);
  if (evaluators.length > 0 && decision.outcome === 'ask' && decision.by !== 'session-rule') {
    const rules = { by: decision.by, ...(decision.rule !== undefined ? { rule: decision.rule } : {}) };
    const asked = await consultEvaluators({
      fromRules: {
        type: 'policy/verdict',
        at: verdict.at,
        turn: verdict.turn,
        step: verdict.step,
        callId: verdict.callId,
        name: verdict.name,
        inputs: verdict.inputs,
        outcome: 'ask',
        ...rules,
        version: policy.version,
        reason: decision.reason,
      },
      evaluators,
      call: { callId: call.id, name: call.name, arguments: call.arguments },
      question: {
        sessionId,
        turn: verdict.turn,
        step: verdict.step,
        events: events.filter((e) => e.seq < verdict.seq),
        rules: { ...rules, reason: decision.reason },
      },
      policy,
    });
    return {
      ...row,
      now: {
        outcome: asked.outcome,
        by: asked.by,
        ...(asked.rule !== undefined ? { rule: asked.rule } : {}),
        ...(asked.evaluator !== undefined ? { evaluator: asked.evaluator } : {}),
      },
      status: asked.outcome === verdict.outcome ? 'same' : 'differs',
      ...(asked.escalated !== undefined ? { note: asked.escalated } : {}),
    };
  }
  const now = {
    outcome: decision.outcome,
    by: decision.by,
    ...(decision.rule !== undefined ? { rule: decision.rule } : {}),
  };
  // An evaluator answered what the rules left open: the same as long as today's rules still leave it open.
  const same =
    verdict.by === 'evaluator'
      ? decision.outcome === 'ask' && decision.by !== 'session-rule'
      : decision.outcome === verdict.outcome;
  return {
    ...row,
    now,
    status: same ? 'same' : 'differs',
    ...(verdict.by === 'evaluator' && same
      ? { note: 'the rules still leave it to the evaluator (not re-run offline)' }
      : {}),
  };
}
