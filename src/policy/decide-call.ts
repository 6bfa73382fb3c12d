// The pure half of the tool policy: given the rules, the rules this session remembered, a call and its
// path facts, which rule decides and how. The file's first matching rule wins; no match asks (fail
// closed); an ask may be answered by a remembered rule. Evaluators (policy-engine.ts) come after this.
import { canonicalJson } from '../core/canonical-json.js';
import type { ArgumentPredicate, PolicyOutcome, PolicyRule } from '../core/policy-rule.js';
import type { VerdictSource } from '../core/events.js';
import { pointerGet } from './json-pointer.js';
import { argKey, dirKey, type PathFacts } from './policy-paths.js';
import { globMatches, PatternUndecidableError, regexMatches } from './policy-patterns.js';
import { ruleMatchesTool } from './tool-pattern.js';

export interface PolicyCall {
  readonly name: string;
  /** The parsed arguments (undefined when the model's argument string is not JSON). */
  readonly args: unknown;
}

export interface PolicyDecision {
  readonly outcome: PolicyOutcome;
  readonly by: Exclude<VerdictSource, 'evaluator'>;
  readonly rule?: string;
  readonly reason: string;
}

/** Decides by the file's rules, then (for an ask) by the session's remembered rules. */
export function decideCall(
  rules: readonly PolicyRule[],
  sessionRules: readonly PolicyRule[],
  call: PolicyCall,
  facts: PathFacts,
): PolicyDecision {
  let rule: PolicyRule | undefined;
  for (const candidate of rules) {
    const matched = tryRule(candidate, call, facts);
    if (typeof matched === 'string')
      // Rules decide in order: one that cannot say leaves every later one unreachable, so the call asks.
      return {
        outcome: 'ask',
        by: 'default',
        reason: `policy rule "${candidate.id}" cannot decide this ${call.name} call: ${matched}`.slice(0, 2000),
      };
    if (matched) {
      rule = candidate;
      break;
    }
  }
  const fromFile: PolicyDecision =
    rule === undefined
      ? { outcome: 'ask', by: 'default', reason: `no policy rule decides ${call.name} calls like this one` }
      : { outcome: rule.outcome, by: 'rule', rule: rule.id, reason: rule.reason ?? defaultReason(rule, call.name) };
  if (fromFile.outcome !== 'ask') return fromFile;
  // A remembered answer answers asks only: it never overrides what the file allows or denies.
  // One that cannot say whether it matches answers nothing: the ask stands.
  const remembered = sessionRules.find((r) => r.outcome !== 'ask' && tryRule(r, call, facts) === true);
  if (remembered === undefined) return fromFile;
  return {
    outcome: remembered.outcome,
    by: 'session-rule',
    rule: remembered.id,
    reason: remembered.reason ?? defaultReason(remembered, call.name),
  };
}

/** Whether the rule matches the call; throws PatternUndecidableError when one of its patterns cannot say. */
export function ruleMatches(rule: PolicyRule, call: PolicyCall, facts: PathFacts): boolean {
  if (!ruleMatchesTool(rule, call.name)) return false;
  return (rule.when ?? []).every((predicate) => predicateHolds(predicate, call.args, facts));
}

export function predicateHolds(predicate: ArgumentPredicate, args: unknown, facts: PathFacts): boolean {
  if (args === undefined) return false;
  const value = pointerGet(args, predicate.arg);
  if (value === undefined) return false;
  if (predicate.equals !== undefined) return canonicalJson(value) === canonicalJson(predicate.equals);
  if (predicate.oneOf !== undefined) return predicate.oneOf.some((v) => canonicalJson(v) === canonicalJson(value));
  if (typeof value !== 'string') return false;
  if (predicate.prefix !== undefined) return value.startsWith(predicate.prefix);
  try {
    if (predicate.glob !== undefined) return globMatches(predicate.glob, value);
    if (predicate.regex !== undefined) return regexMatches(predicate.regex, value);
  } catch (error) {
    if (!(error instanceof PatternUndecidableError)) throw error;
    throw new PatternUndecidableError(`${predicate.arg === '' ? 'the arguments' : predicate.arg}: ${error.message}`);
  }
  if (predicate.inside !== undefined) {
    const path = facts[argKey(predicate.arg)];
    const dir = facts[dirKey(predicate.inside)];
    return typeof path === 'string' && typeof dir === 'string' && pathWithin(dir, path);
  }
  return false;
}

/** Both workspace-relative ("/"-separated, `.` for the root): `path` is `dir` or below it. */
export function pathWithin(dir: string, path: string): boolean {
  return dir === '.' || path === dir || path.startsWith(`${dir}/`);
}

function defaultReason(rule: PolicyRule, name: string): string {
  return rule.outcome === 'deny'
    ? `policy rule "${rule.id}" denies this ${name} call`
    : `policy rule "${rule.id}" ${rule.outcome === 'ask' ? 'asks about' : 'allows'} this ${name} call`;
}

/** Whether the rule matches, or why it cannot say (a pattern and a text RE2 cannot judge). */
function tryRule(rule: PolicyRule, call: PolicyCall, facts: PathFacts): boolean | string {
  try {
    return ruleMatches(rule, call, facts);
  } catch (error) {
    if (error instanceof PatternUndecidableError) return error.message;
    throw error;
  }
}
