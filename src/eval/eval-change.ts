// The declared change of an evaluation applied to a recorded request header, and the digest of a request
// without the fields the change may touch: equal for a source request and its candidate iff only the change differs.
import { parseDocument } from 'yaml';
import { DhError } from '../core/errors.js';
import { digestOf } from '../core/canonical-json.js';
import { RequestHeader, type ToolSchema } from '../core/request-header.js';
import type { BuiltRequest } from '../core/build-request.js';
import { CHANGE_CONFIG_FIELDS, EvalChange } from '../shared/eval-contracts.js';

export const EVAL_CHANGE_INVALID = 'EVAL_CHANGE_INVALID';

/** The recorded header with the change applied; throws EVAL_CHANGE_INVALID when the result is not a valid header. */
export function applyEvalChange(header: RequestHeader, change: EvalChange): RequestHeader {
  const config = { ...header.config };
  for (const field of CHANGE_CONFIG_FIELDS) {
    const value = change[field];
    if (value !== undefined) Object.assign(config, { [field]: value });
  }
  let tools: ToolSchema[] | undefined = change.tools ? [...change.tools] : header.tools ? [...header.tools] : undefined;
  if (change.removeTools) {
    const known = new Set((tools ?? []).map((t) => t.name));
    const unknown = change.removeTools.filter((name) => !known.has(name));
    if (unknown.length > 0) {
      throw new DhError(
        EVAL_CHANGE_INVALID,
        `removeTools names tools the request does not have: ${unknown.join(', ')}`,
      );
    }
    const removed = new Set(change.removeTools);
    tools = (tools ?? []).filter((t) => !removed.has(t.name));
  }
  if (change.addTools) {
    const names = new Set((tools ?? []).map((t) => t.name));
    const repeated = change.addTools.filter((t) => names.has(t.name)).map((t) => t.name);
    if (repeated.length > 0) {
      throw new DhError(EVAL_CHANGE_INVALID, `addTools repeats tools the request already has: ${repeated.join(', ')}`);
    }
    tools = [...(tools ?? []), ...change.addTools];
  }
  const candidate = {
    ...header,
    config,
    ...(change.system !== undefined ? { system: change.system } : {}),
    ...(tools !== undefined ? { tools } : {}),
  };
  const parsed = RequestHeader.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DhError(
      EVAL_CHANGE_INVALID,
      `the changed header is invalid at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/**
 * sha256 of the request without what the change may alter (the changed config fields, the system prompt if
 * changed, the tool list if changed) and without the session id (the candidate lives in its own log).
 */
export function invariantDigest(request: BuiltRequest, change: EvalChange): string {
  const config: Record<string, unknown> = { ...request.config };
  for (const field of CHANGE_CONFIG_FIELDS) if (change[field] !== undefined) delete config[field];
  const toolsChanged = change.tools !== undefined || change.removeTools !== undefined || change.addTools !== undefined;
  return digestOf({
    turn: request.turn,
    step: request.step,
    config,
    system: change.system !== undefined ? null : (request.system ?? null),
    tools: toolsChanged ? null : request.tools,
    messages: request.messages,
  });
}

/** Reads a change file (JSON or YAML); errors name the file and the path of the first problem. */
export function parseEvalChangeText(text: string, source: string): EvalChange {
  const document = parseDocument(text);
  const syntax = document.errors[0];
  if (syntax) {
    const where = syntax.linePos?.[0];
    throw new DhError(
      EVAL_CHANGE_INVALID,
      `${source}${where ? `:${where.line}:${where.col}` : ''}: not valid JSON or YAML: ${(syntax.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
    );
  }
  const parsed = EvalChange.safeParse(document.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.length ? issue.path.join('.') : '(top level)';
    throw new DhError(EVAL_CHANGE_INVALID, `${source}: ${path}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** The change as one line for tables and logs, e.g. `model=deepseek-reasoner, system (412 chars)`. */
export function describeEvalChange(change: EvalChange): string {
  const parts: string[] = [];
  for (const field of CHANGE_CONFIG_FIELDS)
    if (change[field] !== undefined) parts.push(`${field}=${String(change[field])}`);
  if (change.system !== undefined) parts.push(`system (${change.system.length} chars)`);
  if (change.tools !== undefined) parts.push(`tools=[${change.tools.map((t) => t.name).join(',')}]`);
  if (change.removeTools !== undefined) parts.push(`-tools [${change.removeTools.join(',')}]`);
  if (change.addTools !== undefined) parts.push(`+tools [${change.addTools.map((t) => t.name).join(',')}]`);
  return parts.join(', ');
}
