// The loop behind `dh run` and `dh attach`: poll the session follower, render, and decide when to stop
// (the run's own turn ended; or, for attach, the session went idle), watching the workflow (and, while a
// delegation call runs, its subagents' approvals) on the side.
import { WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import { SessionClient } from '../../client/session-client.js';
import type { EventOf, TurnEndReason, Usage } from '../../core/index.js';
import { sessionWorkflowId } from '../../shared/session-messages.js';
import { PatientPoller } from '../../streaming/patient-poller.js';
import { SessionFollower, type StreamFrame } from '../../streaming/session-follower.js';
import type { StreamPosition } from '../../streaming/stream-position.js';
import type { DeltaChannel } from '../../streaming/delta-channel.js';
import type { CliContext } from '../cli-context.js';
import { FailureReporter } from './failing-activities.js';
import type { LiveRenderer } from './live-renderer.js';
import { SubagentWatch } from './subagent-watch.js';

export type FollowMode =
  /** `run`: follow the turn that claims this message, stop when it ends. */
  | { readonly kind: 'message'; readonly messageId: string }
  /** `attach`: follow everything from `fromSeq`; stop when the session is idle (unless `follow`). */
  | { readonly kind: 'session'; readonly follow: boolean };

export interface FollowResult {
  /** How it ended: a turn ended, the session went idle or closed, or the viewer detached. */
  readonly outcome: 'turn-ended' | 'idle' | 'closed' | 'detached';
  readonly turn: number | null;
  readonly reason: TurnEndReason | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  /** The last answer text of the turn (its final assistant message). */
  readonly answer: string | null;
  readonly steps: number;
  readonly usage: Usage;
  readonly toolCalls: number;
}

export interface FollowOptions {
  /** Where to start: a seq (events from it on) or a frame's position (right after that frame). */
  readonly from: StreamPosition;
  /** Each frame as it comes, with its position (`--jsonl`). */
  readonly onFrame?: (frame: StreamFrame) => void;
  readonly mode: FollowMode;
  readonly renderer: LiveRenderer | null;
  /** Set when the viewer should stop (second Ctrl-C). */
  readonly detach: AbortSignal;
  readonly pollMs?: number;
}

const WATCH_EVERY_MS = 2_000;
/** Nothing streamed for this long: the watch also reports activities that fail and are being retried. */
const QUIET_MS = 1_500;

export async function followSession(
  ctx: CliContext,
  channel: DeltaChannel,
  sessionId: string,
  options: FollowOptions,
): Promise<FollowResult> {
  const follower = new SessionFollower(ctx.store, channel, sessionId, { from: options.from });
  const quick = new SessionClient(ctx.client, { taskQueue: ctx.stack.taskQueue, timeoutMs: 3_000, maxAttempts: 2 });
  const { mode, renderer } = options;
  const usage = { inputUncached: 0, cacheRead: 0, output: 0, reasoning: 0 };
  let turn: number | null = null;
  let lastEnd: EventOf<'turn/end'> | null = null;
  let answer: string | null = null;
  let steps = 0;
  let toolCalls = 0;
  let openTurn: number | null = null;
  let checkIdle = mode.kind === 'session';
  let lastWatch = Date.now();
  let lastOpAt = Date.now();
  const failures = new FailureReporter();
  // Without a renderer (--json) the failures still reach stderr: a script's log shows why nothing happens.
  const note = (line: string): void =>
    renderer !== null ? renderer.note(`↻ ${line}`) : void process.stderr.write(`dh: ${line}\n`);
  const subagents = new SubagentWatch(sessionId, {
    state: (id) => quick.state(id),
    note: (line) => (renderer !== null ? renderer.note(line) : void process.stderr.write(`dh: ${line.trim()}\n`)),
  });
  const result = (outcome: FollowResult['outcome']): FollowResult => ({
    outcome,
    turn: lastEnd?.turn ?? turn,
    reason: lastEnd?.reason ?? null,
    error: lastEnd?.error ?? null,
    answer,
    steps,
    usage,
    toolCalls,
  });

  // A store that fails for a moment (a database restart) stalls the view; it carries on where it was.
  const poller = new PatientPoller(follower, {
    onStall: (reason) => note(`the session's log cannot be read (${reason}); retrying`),
    onRecover: () => note('reading the log again'),
  });
  renderer?.waiting(mode.kind === 'message' ? 'waiting for the session…' : 'attaching…');
  for (;;) {
    if (options.detach.aborted) return result('detached');
    const ops = await poller.poll();
    if (ops.length > 0) lastOpAt = Date.now();
    for (const op of ops) {
      options.onFrame?.(op);
      const event = op.type === 'event' || op.type === 'answer' ? op.event : null;
      if (event !== null) subagents.event(event);
      if (event?.type === 'turn/start') openTurn = event.turn;
      if (event?.type === 'turn/end' && openTurn === event.turn) openTurn = null;
      if (mode.kind === 'message') {
        if (event?.type === 'inbox/claim' && event.messageIds.includes(mode.messageId)) turn = event.turn;
        if (event?.type === 'inbox/discard' && event.messageIds.includes(mode.messageId)) {
          throw new Error(`the session discarded the message: ${event.reason}`);
        }
        const opTurn = event !== null ? ('turn' in event ? event.turn : null) : 'turn' in op ? op.turn : null;
        if (turn === null || opTurn !== turn) continue;
      } else if (event !== null && 'turn' in event) {
        turn = event.turn;
      }
      renderer?.op(op);
      if (op.type === 'answer') {
        steps++;
        toolCalls += op.event.toolCalls.length;
        if (op.event.usage) for (const k of Object.keys(usage) as (keyof Usage)[]) usage[k] += op.event.usage[k];
        if (op.event.toolCalls.length === 0 || (op.event.content ?? '') !== '') answer = op.event.content;
      }
      if (event?.type === 'turn/start' && mode.kind === 'session') {
        // A new turn: the summary describes it alone.
        steps = 0;
        toolCalls = 0;
        for (const k of Object.keys(usage) as (keyof Usage)[]) usage[k] = 0;
      }
      if (event?.type === 'turn/end') {
        lastEnd = event;
        if (mode.kind === 'message') {
          renderer?.close();
          return result('turn-ended');
        }
        checkIdle = true;
      }
    }

    if (mode.kind === 'session' && checkIdle && !mode.follow && openTurn === null) {
      checkIdle = false;
      if (await isIdle(quick, sessionId)) {
        renderer?.close();
        return result('idle');
      }
    }

    // Cheap when no delegation call runs: nothing is asked.
    await subagents.poll();

    if (Date.now() - lastWatch > WATCH_EVERY_MS) {
      lastWatch = Date.now();
      const { status, description } = await watchWorkflow(ctx, sessionId);
      if (status !== 'RUNNING' && status !== 'UNREACHABLE') {
        renderer?.close();
        if (mode.kind === 'message' && status !== 'COMPLETED') {
          throw new Error(`the session's workflow is ${status.toLowerCase().replace(/_/g, ' ')}`);
        }
        // Read what the last run logged before it closed.
        for (const op of await poller.poll()) {
          options.onFrame?.(op);
          if (mode.kind === 'session') renderer?.op(op);
        }
        renderer?.close();
        return result('closed');
      }
      // The same description (no extra call): a step that streams nothing while its activity fails.
      if (description !== null && Date.now() - lastOpAt > QUIET_MS) {
        for (const line of failures.notes(description, Date.now())) note(line);
      }
      if (mode.kind === 'session' && !mode.follow && openTurn === null) checkIdle = true;
    }
    await follower.wait(options.pollMs ?? 100);
  }
}

/** Idle = no turn running, nothing queued that will start one. Unknown (no worker answers) counts as idle. */
async function isIdle(client: SessionClient, sessionId: string): Promise<boolean> {
  try {
    const state = await client.state(sessionId);
    return (
      (state.status === 'idle' || state.status === 'closed') &&
      state.queues.nextTurn === 0 &&
      state.queues.notYetLogged === 0 &&
      !state.wakeLatched
    );
  } catch {
    return true;
  }
}

interface WorkflowWatch {
  /** The workflow's status name, or NOT_FOUND / UNREACHABLE. */
  readonly status: string;
  readonly description: WorkflowExecutionDescription | null;
}

async function watchWorkflow(ctx: CliContext, sessionId: string): Promise<WorkflowWatch> {
  try {
    const description = await ctx.client.withDeadline(Date.now() + 3_000, () =>
      ctx.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe(),
    );
    return { status: description.status.name, description };
  } catch (error) {
    return { status: error instanceof WorkflowNotFoundError ? 'NOT_FOUND' : 'UNREACHABLE', description: null };
  }
}
