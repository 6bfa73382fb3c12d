// `dh eval --continue`: the rest of the turn on the candidate, in its eval log. Each step is sent like a session's
// (eval-send.ts); its tool calls run in a throw-away copy of the source's workspace, where only idempotent tools
// run unless the run allows others by name — never MCP tools or subagents unless named, never one that asks for
// approval. A retry resumes at the first thing the log does not hold yet.
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import type { Session } from '../core/index.js';
import { TOOL_OUTCOME_UNKNOWN, buildSessionRequest, type EventDraft, type EventOf } from '../core/index.js';
import { MCP_TOOL_PREFIX, toolNameMatches } from '../mcp/mcp-tool-name.js';
import type { ToolDefinition } from '../plugins/contracts.js';
import { toWireBody } from '../providers/wire-body.js';
import type { ActivityContext } from './activity-context.js';
import { answerOpenStep } from './eval-send.js';
import { worstCaseOf } from './cost-cap.js';
import { runTool } from './run-tool.js';
import type { SessionRuntime } from './session-runtime.js';

/** Steps a continued turn may take when the run names no limit (counted from the evaluated step). */
export const DEFAULT_EVAL_MAX_STEPS = 20;

export interface ContinueOptions {
  /** Tools allowed to run although not idempotent, MCP tools and subagents (names, or `mcp__<server>` for a server's). */
  readonly allowTools: readonly string[];
  readonly maxSteps: number;
  /** What the turn's calls may cost together (USD); absent: no budget. */
  readonly allowanceUsd?: number;
}

/** Runs the eval log's open turn to its end; returns the log with the turn ended. */
export async function continueTurn(
  context: ActivityContext,
  runtime: SessionRuntime,
  opened: Session,
  options: ContinueOptions,
): Promise<Session> {
  const { cache } = context;
  const firstStep = opened.state.openStep?.step ?? opened.state.lastStep;
  const workspace = await throwAwayWorkspace(runtime, opened);
  let session = opened;
  const append = async (drafts: EventDraft[]) => (session = await cache.append(session, drafts));
  for (;;) {
    const { openTurn, openStep, lastStep } = session.state;
    if (openTurn === null) break;
    const at = Date.now();
    if (openStep === null) {
      if (lastStep - firstStep + 1 >= options.maxSteps) {
        await append([{ type: 'turn/end', at, turn: openTurn, reason: 'max-steps' }]);
      } else {
        await append([{ type: 'step/start', at, turn: openTurn, step: lastStep + 1 }]);
      }
      continue;
    }
    if (openStep.assistantSeq === null) {
      const refusal = openStep.requestSeq === null ? await overAllowance(runtime, session, options) : null;
      if (refusal !== null) {
        await append([
          { type: 'step/end', at, turn: openTurn, step: openStep.step },
          { type: 'turn/end', at, turn: openTurn, reason: 'budget', error: { code: 'EVAL_BUDGET', message: refusal } },
        ]);
        continue;
      }
      session = await answerOpenStep(context, runtime, session);
      continue;
    }
    const pending = [...openStep.calls.values()].filter((call) => !call.answered);
    const answer = session.events[openStep.assistantSeq] as EventOf<'assistant/message'>;
    if (pending.length === 0) {
      await append([
        { type: 'step/end', at, turn: openTurn, step: openStep.step },
        ...(answer.toolCalls.length === 0
          ? [{ type: 'turn/end' as const, at, turn: openTurn, reason: 'completed' as const }]
          : []),
      ]);
      continue;
    }
    for (const state of pending) {
      const call = answer.toolCalls.find((c) => c.id === state.callId);
      if (call === undefined) continue;
      const base = { at: Date.now(), turn: openTurn, step: openStep.step, callId: call.id, name: call.name };
      if (state.started) {
        // Started by an attempt that died before its result: what it did is unknown, as in a session.
        await append([{ type: 'tool/result', ...base, status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN }]);
        continue;
      }
      // The eval log names its parent's agent: that agent's tools.
      const tool = (runtime.toolsOf?.(session.events) ?? runtime.tools).get(call.name);
      const refused = await refusalOf(runtime, tool, call, session, options);
      if (refused !== null) {
        await append([{ type: 'tool/result', ...base, status: 'error', output: refused }]);
        continue;
      }
      await append([{ type: 'tool/start', ...base }]);
      const activity = Context.current();
      const beat = setInterval(() => activity.heartbeat(), runtime.heartbeatMs);
      try {
        const out = await runTool(tool, call, {
          sessionId: session.sessionId,
          callId: call.id,
          workspace,
          signal: activity.cancellationSignal,
        });
        await append([{ type: 'tool/result', ...base, at: Date.now(), status: out.status, output: out.output }]);
      } finally {
        clearInterval(beat);
      }
    }
  }
  await rm(workspace, { recursive: true, force: true });
  return session;
}

/** Why the evaluation does not run this call (a result the model reads), or null to run it. */
async function refusalOf(
  runtime: SessionRuntime,
  tool: ToolDefinition | undefined,
  call: { readonly id: string; readonly name: string; readonly arguments: string },
  session: Session,
  options: ContinueOptions,
): Promise<string | null> {
  if (tool === undefined) return null; // runTool answers an unknown tool like a session does
  const named = options.allowTools.some((entry) => toolNameMatches(entry, call.name));
  const prefix = 'Refused by the evaluation (dh eval --continue):';
  if (tool.delegation !== undefined && !named) return `${prefix} subagents do not run in an evaluation.`;
  if (call.name.startsWith(MCP_TOOL_PREFIX) && !named) {
    return `${prefix} MCP tools run only when the run allows them (--allow-tool ${call.name}).`;
  }
  if (!tool.idempotent && !named) {
    return `${prefix} "${call.name}" is not idempotent; it runs only when the run allows it (--allow-tool ${call.name}).`;
  }
  const open = session.state.openStep;
  const gate = await runtime.toolBefore?.(
    { callId: call.id, name: call.name, arguments: call.arguments },
    { sessionId: session.sessionId, turn: open?.turn ?? 0, step: open?.step ?? 0, events: session.events },
  );
  if (gate?.decision === 'deny') return `The call was denied: ${gate.reason}`;
  if (gate?.decision === 'ask') return `${prefix} the call needs an approval, which an evaluation does not ask for.`;
  return null;
}

/** The next call's worst case does not fit in what the turn has left of its allowance: why, or null. */
async function overAllowance(
  runtime: SessionRuntime,
  session: Session,
  options: ContinueOptions,
): Promise<string | null> {
  if (options.allowanceUsd === undefined) return null;
  const request = buildSessionRequest(session);
  const { provider, model } = request.config;
  const bound = worstCaseOf(
    runtime,
    session,
    request,
    (await toWireBody(request, runtime.profile, runtime.readAttachment)).bytes,
  );
  if ('problem' in bound) {
    return bound.problem === 'no-price'
      ? `a budget is set but "${provider}/${model}" has no price`
      : 'a budget is set but the call has no output limit';
  }
  const worst = bound.worstUsd;
  const seedLength = session.state.parent?.seedLength ?? 0;
  const spent = session.events
    .slice(seedLength)
    .reduce((sum, e) => sum + (e.type === 'assistant/message' ? (e.cost?.usd ?? 0) : 0), 0);
  const left = options.allowanceUsd - spent;
  return worst <= left
    ? null
    : `the next call may cost up to $${worst.toFixed(6)}, $${left.toFixed(6)} of the turn's share is left`;
}

/**
 * Where the continued turn's tools run: a copy of the source session's workspace on this host as it is now (not as it
 * was at the turn), or an empty directory; kept across retries on this host, removed when the turn has ended.
 */
async function throwAwayWorkspace(runtime: SessionRuntime, session: Session): Promise<string> {
  const dir = join(tmpdir(), 'dh-eval-workspaces', session.sessionId);
  if (await exists(dir)) return dir;
  const sourceId = session.state.parent?.sessionId;
  const source =
    sourceId === undefined
      ? undefined
      : runtime.workspaceFor
        ? runtime.workspaceFor(sourceId)
        : join(tmpdir(), 'dh-workspaces', sourceId);
  if (source !== undefined && (await exists(source))) await cp(source, dir, { recursive: true });
  else await mkdir(dir, { recursive: true });
  return dir;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
