// Which tools a rule names: an exact name, `*`, `mcp__<server>` (all of that server's tools) or a glob.
import picomatch from 'picomatch';
import type { PolicyRule } from '../core/policy-rule.js';
import { toolNameMatches } from '../mcp/mcp-tool-name.js';

const compiled = new Map<string, (name: string) => boolean>();

export function toolPatternMatches(pattern: string, name: string): boolean {
  if (pattern === '*' || toolNameMatches(pattern, name)) return true;
  let matcher = compiled.get(pattern);
  if (matcher === undefined) {
    matcher = picomatch.scan(pattern).isGlob ? picomatch(pattern, { dot: true }) : () => false;
    compiled.set(pattern, matcher);
  }
  return matcher(name);
}

export function ruleMatchesTool(rule: PolicyRule, name: string): boolean {
  return [rule.tool].flat().some((pattern) => toolPatternMatches(pattern, name));
}
