// Which tools a rule names: an exact name, `*`, `mcp__<server>` (all of that server's tools) or a glob,
// matched on RE2 (policy-patterns.ts): the model chooses the names it calls.
import type { PolicyRule } from '../core/policy-rule.js';
import { toolNameMatches } from '../mcp/mcp-tool-name.js';
import { PatternUndecidableError, toolGlobMatches } from './policy-patterns.js';

/** Throws PatternUndecidableError for a name too long to match a glob against. */
export function toolPatternMatches(pattern: string, name: string): boolean {
  try {
    return toolNameMatches(pattern, name) || toolGlobMatches(pattern, name);
  } catch (error) {
    if (!(error instanceof PatternUndecidableError)) throw error;
    throw new PatternUndecidableError(`the tool name: ${error.message}`);
  }
}

/** Throws PatternUndecidableError when a glob of the rule cannot say. */
export function ruleMatchesTool(rule: PolicyRule, name: string): boolean {
  return [rule.tool].flat().some((pattern) => toolPatternMatches(pattern, name));
}

/** For gathering facts a rule might look at: a rule that cannot say whether it names the tool might. */
export function ruleMayMatchTool(rule: PolicyRule, name: string): boolean {
  try {
    return ruleMatchesTool(rule, name);
  } catch (error) {
    if (error instanceof PatternUndecidableError) return true;
    throw error;
  }
}
