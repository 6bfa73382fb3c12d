// When a subagent trial's children ran: the moment a kill may be timed from (a child's first step), and
// which kills landed while some child's log was open (what the run reports as kills among children).
import { DELEGATE_TOOL_NAME, type SessionEvent } from '../../../src/core/index.js';
import type { SessionStore } from '../../../src/stores/session-store.js';
import { sleep } from './chaos-messages.js';
import type { TrialPlan } from './chaos-plan.js';
import type { ChildLog } from './check-subagents.js';

/**
 * A child-timed kill whose children never came is done when that is certain — the parent's first step answered
 * without delegating (a retried step can take another reply) — or, at the latest, this late. A fixed deadline
 * alone was a race: on a loaded machine the children came after it, and the kill landed before them.
 */
const NO_CHILD_KILL_MS = 120_000;

/**
 * Resolves at a harness kill's moment: `killAtMs` after f1 was accepted (`t0`); or, when the plan times it
 * from the children, `childKillMs` after the first child opened a step.
 */
export async function killMoment(
  plan: TrialPlan,
  t0: number,
  store: Pick<SessionStore, 'read'>,
  parentId: string,
  stopped: () => boolean,
): Promise<void> {
  const after = (from: number, ms: number) => sleep(Math.max(0, from + ms - Date.now()));
  if (plan.childKillMs === null) return await after(t0, plan.killAtMs);
  const childKillMs = plan.childKillMs;
  const read = (id: string) => store.read(id);
  const fromChild = firstChildStep(read, parentId, stopped).then((t) => after(t, childKillMs));
  await Promise.race([fromChild, answeredWithoutChildren(read, parentId, stopped), after(t0, NO_CHILD_KILL_MS)]);
}

/** Resolves once the parent's first answer is logged and delegates to nobody (or never: see firstChildStep). */
async function answeredWithoutChildren(
  read: (sessionId: string) => Promise<readonly SessionEvent[]>,
  parentId: string,
  stopped: () => boolean,
): Promise<void> {
  for (;;) {
    if (stopped()) return new Promise<void>(() => {});
    const parent = await read(parentId).catch(() => []);
    const first = parent.find((e) => e.type === 'assistant/message');
    if (first?.type === 'assistant/message' && !first.toolCalls.some((c) => c.name === DELEGATE_TOOL_NAME)) return;
    if (first !== undefined) return new Promise<void>(() => {}); // it delegates: the children will come
    await sleep(50);
  }
}

/**
 * Resolves with the time the first child of `parentId` opened a step (polling the store through `read`),
 * or never: the caller races it against its own deadline. Stops polling once `stopped()` says so.
 */
export async function firstChildStep(
  read: (sessionId: string) => Promise<readonly SessionEvent[]>,
  parentId: string,
  stopped: () => boolean,
): Promise<number> {
  for (;;) {
    if (stopped()) return new Promise<number>(() => {});
    const parent = await read(parentId).catch(() => []);
    for (const start of parent) {
      if (start.type !== 'tool/start' || start.child === undefined) continue;
      const child = await read(start.child).catch(() => []);
      if (child.some((e) => e.type === 'step/start')) return Date.now();
    }
    await sleep(50);
  }
}

/** From a child's first event to its last: when it ran. */
export function childWindows(children: readonly ChildLog[]): Array<readonly [number, number]> {
  return children.flatMap((c) => {
    const first = c.events[0];
    const last = c.events.at(-1);
    return first && last ? [[first.at, last.at] as const] : [];
  });
}

/** How many of `killTimes` fall inside some child's window. */
export function killsAmongChildren(
  killTimes: readonly number[],
  windows: ReadonlyArray<readonly [number, number]>,
): number {
  return killTimes.filter((t) => windows.some(([from, to]) => from <= t && t <= to)).length;
}

/** When the children ran, relative to f1's acceptance (`t0`), for a trial's log line. */
export function childrenRan(children: readonly ChildLog[], t0: number): string {
  const windows = childWindows(children);
  if (windows.length === 0) return '(none ran)';
  return `(ran +${Math.min(...windows.map(([from]) => from)) - t0}..+${Math.max(...windows.map(([, to]) => to)) - t0} ms)`;
}
