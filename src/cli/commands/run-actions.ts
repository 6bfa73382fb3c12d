// What `dh run` and `dh attach` do; run-commands.ts defines them and loads this module when one runs.
import { randomBytes, randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { MessageSignalPayload, sessionWorkflowId } from '../../shared/session-messages.js';
import { openDeltaChannel } from '../../streaming/open-delta-channel.js';
import { openCliContext, type CliContext } from '../cli-context.js';
import { CliError, ExitCode, exitCodeForTurn, usageError } from '../exit-codes.js';
import { cliAction, sessionArg, textArg } from '../cli-action.js';
import { ctrlC } from '../live/ctrl-c.js';
import { followSession, type FollowResult } from '../live/follow-session.js';
import { LiveRenderer } from '../live/live-renderer.js';
import { writeFrameLine } from '../live/frame-line.js';
import { parsePosition, type StreamPosition } from '../../streaming/stream-position.js';
import { warnWithoutWorker } from '../worker-warning.js';
import { refuseUnservedAgent } from '../served-agents.js';
import { loggedAgent } from '../../agents/agent-directory.js';
import { AgentName } from '../../core/index.js';

/** A new session id: sortable by creation time, unique enough for one user's sessions. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * `DH_TRACE_TIMING=1`: `dh-timing: <sending|accepted> <epoch ms>` on stderr just before the followup is
 * sent and once Temporal has accepted it (and Ctrl-C is handled) — the moments bench/first-token.bench.ts
 * measures from.
 */
function traceTiming(label: string): void {
  if (process.env.DH_TRACE_TIMING !== '1') return;
  process.stderr.write(`dh-timing: ${label} ${(performance.timeOrigin + performance.now()).toFixed(1)}\n`);
}

export interface RunOptions {
  session?: string;
  /** The agent a new session runs. */
  agent?: string;
  json?: boolean;
  jsonl?: boolean;
  source: string;
}

export interface AttachOptions {
  follow?: boolean;
  from?: string;
  json?: boolean;
  jsonl?: boolean;
}

export const runCommand = cliAction(async (task: string, options: RunOptions) => {
  if (options.json && options.jsonl) throw usageError('--json and --jsonl cannot be used together');
  const sessionId = options.session !== undefined ? sessionArg(options.session) : newSessionId();
  const messageId = `cli-${randomUUID()}`;
  const payload = MessageSignalPayload.safeParse({ content: textArg(task), messageId, source: options.source });
  if (!payload.success) throw usageError(`invalid task: ${payload.error.issues[0]?.message ?? 'invalid'}`);
  const agent = options.agent !== undefined ? agentArg(options.agent) : undefined;

  const ctx = await openCliContext();
  const channel = openDeltaChannel(ctx.config.store);
  // Stops the look for a worker (see warnWithoutWorker) when the command ends, however it ends.
  const watch = new AbortController();
  let watching: Promise<void> = Promise.resolve();
  try {
    if (options.session !== undefined) await refuseClosed(ctx, sessionId);
    if (agent !== undefined) {
      // Both before anything is sent: a session keeps its agent, and a name no worker serves would only fail there.
      if (options.session !== undefined) await refuseOtherAgent(ctx, sessionId, agent);
      await refuseUnservedAgent(ctx.config.store, ctx.stack.taskQueue, agent);
    }
    const fromSeq = await ctx.store.head(sessionId).catch(() => 0);
    const renderer = quiet(options) ? null : new LiveRenderer({ sessionId, hideMessageIds: new Set([messageId]) });
    process.stderr.write(`dh: session ${sessionId} (watch it elsewhere: dh attach ${sessionId})\n`);
    traceTiming('sending');
    await ctx.sessions.followup(sessionId, payload.data.content, {
      start: true,
      messageId,
      source: options.source,
      ...(agent !== undefined ? { agent } : {}),
    });

    const detach = new AbortController();
    watching = warnWithoutWorker(ctx, sessionId, { untilWorker: watch.signal, ...noteOn(renderer) });
    const onSigint = ctrlC({
      first: () => {
        renderer?.note('interrupting the turn… (Ctrl-C again to detach; the session keeps running)');
        ctx.sessions.interrupt(sessionId, 'Ctrl-C in dh run').catch(() => detach.abort());
      },
      again: () => detach.abort(),
    });
    const result = await followWhile(onSigint, renderer, () => {
      // Printed once Ctrl-C is handled: a script that signals on seeing it must not find the default action.
      traceTiming('accepted');
      return followSession(ctx, channel, sessionId, {
        from: { seq: fromSeq, delta: 0 },
        ...(options.jsonl ? { onFrame: writeFrameLine } : {}),
        mode: { kind: 'message', messageId },
        renderer,
        detach: detach.signal,
      });
    });
    return finish(sessionId, result, options.json, renderer);
  } finally {
    watch.abort();
    await watching;
    await channel.close();
    await ctx.close();
  }
});

export const attachCommand = cliAction(async (session: string, options: AttachOptions) => {
  const sessionId = sessionArg(session);
  const from = options.from !== undefined ? positionArg(options.from) : null;
  if (options.json && options.jsonl) throw usageError('--json and --jsonl cannot be used together');
  const ctx = await openCliContext();
  const channel = openDeltaChannel(ctx.config.store);
  // Stops the look for a worker (see warnWithoutWorker) when the command ends, however it ends.
  const watch = new AbortController();
  let watching: Promise<void> = Promise.resolve();
  try {
    const events = await ctx.store.read(sessionId).catch(async (error: unknown) => {
      if ((error as { code?: unknown }).code !== 'SESSION_NOT_FOUND') throw error;
      if (!(await workflowExists(ctx, sessionId)))
        throw new CliError(`session "${sessionId}" does not exist`, ExitCode.SessionUnavailable);
      return [];
    });
    // Catch up from the start of the current (or last) turn, unless told where to go on from.
    const lastTurnStart = events.findLast((e) => e.type === 'turn/start');
    const renderer = quiet(options) ? null : new LiveRenderer({ sessionId });
    const detach = new AbortController();
    watching = warnWithoutWorker(ctx, sessionId, { untilWorker: watch.signal, ...noteOn(renderer) });
    const result = await followWhile(
      () => detach.abort(),
      renderer,
      () =>
        followSession(ctx, channel, sessionId, {
          from: from ?? { seq: lastTurnStart?.seq ?? 0, delta: 0 },
          ...(options.jsonl ? { onFrame: writeFrameLine } : {}),
          mode: { kind: 'session', follow: options.follow === true },
          renderer,
          detach: detach.signal,
        }),
    );
    return finish(sessionId, result, options.json, renderer);
  } finally {
    watch.abort();
    await watching;
    await channel.close();
    await ctx.close();
  }
});

/** `--json` and `--jsonl` print to stdout: no live rendering. */
function quiet(options: { json?: boolean; jsonl?: boolean }): boolean {
  return options.json === true || options.jsonl === true;
}

/** A `--from` value: a stream position, or a usage error naming what one looks like. */
function positionArg(text: string): StreamPosition {
  try {
    return parsePosition(text);
  } catch (error) {
    throw usageError(`--from: ${(error as Error).message}`);
  }
}

function finish(
  sessionId: string,
  result: FollowResult,
  json: boolean | undefined,
  renderer: LiveRenderer | null,
): number {
  if (json) process.stdout.write(`${JSON.stringify({ sessionId, ...result })}\n`);
  if (result.outcome === 'detached') {
    renderer?.note(`detached; the session keeps running (dh attach ${sessionId})`);
    return ExitCode.Detached;
  }
  if (result.outcome === 'closed' && result.reason === null) {
    renderer?.note(`session ${sessionId} is closed`);
    return ExitCode.SessionUnavailable;
  }
  if (result.reason === 'completed' && renderer?.tty === true) {
    const tokens = result.usage.inputUncached + result.usage.cacheRead + result.usage.output;
    renderer.note(`✓ turn ${result.turn ?? '?'} completed · ${result.steps} step(s) · ${tokens} tokens`);
  }
  return result.reason !== null ? exitCodeForTurn(result.reason) : ExitCode.Ok;
}

/** An `--agent` value: a name as agents are named, or a usage error. */
function agentArg(name: string): string {
  const parsed = AgentName.safeParse(name);
  if (!parsed.success) throw usageError(`--agent "${name}": ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** `--agent` on an existing session: only the agent it already runs (its log's `session/start` names it). */
async function refuseOtherAgent(ctx: CliContext, sessionId: string, agent: string): Promise<void> {
  const events = await ctx.store.read(sessionId).catch(() => []);
  if (events.length === 0 && !(await workflowExists(ctx, sessionId))) return;
  const runs = loggedAgent(events)?.name;
  if (runs === agent) return;
  const which =
    runs !== undefined
      ? `runs the agent "${runs}"`
      : events.length > 0
        ? "runs the workers' default agent"
        : 'exists already';
  throw usageError(
    `session "${sessionId}" ${which}, and a session keeps the agent it started with: drop --agent, or start a ` +
      `new session with dh run --agent ${agent} "<task>"`,
  );
}

/** A session whose workflow has completed takes no more tasks through `run`. */
async function refuseClosed(ctx: CliContext, sessionId: string): Promise<void> {
  let status: string;
  try {
    status = (await ctx.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return;
    throw error;
  }
  if (status !== 'RUNNING') {
    throw new CliError(
      `session "${sessionId}" is closed (${status.toLowerCase()}); reopen it with \`dh resume ${sessionId}\``,
      ExitCode.SessionUnavailable,
    );
  }
}

async function workflowExists(ctx: CliContext, sessionId: string): Promise<boolean> {
  try {
    await ctx.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** Worker warnings through the renderer (which keeps its spinner and the stream's line intact), else stderr. */
function noteOn(renderer: LiveRenderer | null): { note?: (line: string) => void } {
  return renderer !== null ? { note: (line) => renderer.note(`dh: ${line}`) } : {};
}

/** Follows with `onSigint` handling Ctrl-C for as long as it runs; the renderer is closed either way. */
async function followWhile(
  onSigint: () => void,
  renderer: LiveRenderer | null,
  follow: () => Promise<FollowResult>,
): Promise<FollowResult> {
  process.on('SIGINT', onSigint);
  try {
    return await follow();
  } finally {
    process.off('SIGINT', onSigint);
    renderer?.close();
  }
}
