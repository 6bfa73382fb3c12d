// The pure half of the tool policy: given the rules, the rules this session remembered, a call and its
// path facts, which rule decides and how. The file's first matching rule wins; no match asks (fail
// closed); an ask may be answered by a remembered rule. Evaluators (policy-engine.ts) come after this.
import picomatch from 'picomatch';
import { canonicalJson } from '../core/canonical-json.js';
import type { ArgumentPredicate, PolicyOutcome, PolicyRule } from '../core/policy-rule.js';
import type { VerdictSource } from '../core/events.js';
import { pointerGet } from './json-pointer.js';
import { argKey, dirKey, type PathFacts } from './policy-paths.js';
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
  const rule = rules.find((r) => ruleMatches(r, call, facts));
  const fromFile: PolicyDecision =
    rule === undefined
      ? { outcome: 'ask', by: 'default', reason: `no policy rule decides ${call.name} calls like this one` }
      : { outcome: rule.outcome, by: 'rule', rule: rule.id, reason: rule.reason ?? defaultReason(rule, call.name) };
  if (fromFile.outcome !== 'ask') return fromFile;
  // A remembered answer answers asks only: it never overrides what the file allows or denies.
  const remembered = sessionRules.find((r) => r.outcome !== 'ask' && ruleMatches(r, call, facts));
  if (remembered === undefined) return fromFile;
  return {
    outcome: remembered.outcome,
    by: 'session-rule',
    rule: remembered.id,
    reason: remembered.reason ?? defaultReason(remembered, call.name),
  };
}

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
  if (predicate.glob !== undefined) return globMatcher(predicate.glob)(value);
  if (predicate.regex !== undefined) return regexMatcher(predicate.regex)(value);
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

const globs = new Map<string, (text: string) => boolean>();
const regexes = new Map<string, (text: string) => boolean>();

// `bash`: a single `*` crosses "/" too, as a shell user expects of `git *`.
function globMatcher(glob: string): (text: string) => boolean {
  let matcher = globs.get(glob);
  if (matcher === undefined) globs.set(glob, (matcher = picomatch(glob, { bash: true, dot: true })));
  return matcher;
}

// Anchored: a pattern meant for `npm test` must not also pass `npm test; rm -rf ~`.
function regexMatcher(source: string): (text: string) => boolean {
  let matcher = regexes.get(source);
  if (matcher === undefined) {
    const regex = new RegExp(`^(?:${source})$`, 'u');
    regexes.set(source, (matcher = (text) => regex.test(text)));
  }
  return matcher;
}
