// A session that has a bit of everything the console draws, run on the real stack: tool calls (one allowed by a
// policy rule, one that asks and is approved by a named reviewer, one delegating to a subagent), an injected
// context message, a markdown answer, a hostile answer, a manual compaction and a turn after it.
import { COMPACTION_INSTRUCTION } from '../../src/core/index.js';
import { SessionClient } from '../../src/client/session-client.js';
import { createPolicyEngine } from '../../src/policy/policy-engine.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { createDelegateTool } from '../../src/tools/delegate.js';
import { echoTool } from '../helpers/test-tools.js';
import { startHarness, TEST_MODEL, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

/** The delegation call's child: `<parent>.<callId>-<turn>-<index of the call in the answer>`. */
export const tourChild = (sessionId: string) => `${sessionId}.d1-1-2`;
export const REVIEWER = 'reviewer-ann';
export const INJECTED = 'CONTEXT from ops: deploys are frozen until Monday.';
export const MARKDOWN_ANSWER = 'The tour **started well**: `echo`, `shout` and a subagent all answered.';
/** Raw HTML, a script and a javascript: link: none of it may become an element, a handler or a link. */
export const HOSTILE_ANSWER =
  'Careful: <img src=x onerror="window.__pwned=1"> and [click me](javascript:window.__pwned=2) ' +
  'and <script>window.__pwned=3</script> and <a href="javascript:window.__pwned=4">raw link</a>. **bold move**';

const SUMMARIZE = COMPACTION_INSTRUCTION.slice(0, 40);

const TOUR_SCRIPT: Script = {
  mode: 'match',
  replies: [
    {
      match: { lastUserContains: 'start the tour' },
      toolCalls: [
        { id: 'e1', name: 'echo', arguments: { text: 'hello' } },
        { id: 's1', name: 'shout', arguments: { text: 'hey' } },
        { id: 'd1', name: 'delegate', arguments: { task: 'child job: report back' } },
      ],
    },
    { match: { lastUserContains: 'child job' }, text: 'child reporting back' },
    { match: { lastUserContains: 'start the tour' }, text: MARKDOWN_ANSWER },
    // The followup and the inject enter the same step, in either order: both carry the word.
    { match: { lastUserContains: 'frozen' }, text: HOSTILE_ANSWER },
    { match: { lastUserContains: SUMMARIZE }, text: 'Summary: a tour with tools, a subagent and an injected note.' },
    { match: { lastUserContains: 'after the compaction' }, text: 'Still here after the compaction.' },
  ],
};

/** echo and delegate are allowed by rules; shout has no rule, so the policy asks. */
const POLICY = parsePolicy(
  JSON.stringify({
    version: 'tour-v1',
    rules: [
      { id: 'echo-ok', tool: 'echo', outcome: 'allow' },
      { id: 'delegate-ok', tool: 'delegate', outcome: 'allow' },
    ],
  }),
  'policy.json',
);

export function startTourHarness(script: Script['replies'] = []): Promise<Harness> {
  return startHarness({
    script: { ...TOUR_SCRIPT, replies: [...TOUR_SCRIPT.replies, ...script] },
    tools: [
      echoTool,
      { ...echoTool, schema: { ...echoTool.schema, name: 'shout' } },
      createDelegateTool({ maxDepth: 1 }),
    ],
    policy: createPolicyEngine(POLICY),
    // Priced like a small hosted model, so every step carries its cost and the cost table sums it.
    fleet: { pricing: { [`scripted/${TEST_MODEL}`]: TOUR_PRICE } },
  });
}

/** USD per million tokens. */
export const TOUR_PRICE = { inputPerMillion: 0.27, cachedInputPerMillion: 0.07, outputPerMillion: 1.1 };

/**
 * Runs the tour to its end as session `id` (each test file its own: they share one Temporal server): three
 * turns and a compaction between the second and the third.
 */
export async function runTour(h: Harness, id: string): Promise<void> {
  const sessions = new SessionClient(h.client, { taskQueue: h.taskQueue });
  const handle = await h.start(id, { keepRecentTurns: 0 });
  await sessions.followup(id, 'Please start the tour.');
  await waitForState(handle, (s) => s.pendingApproval?.callId === 's1', 60_000);
  await sessions.approve(id, { callId: 's1', decision: 'approve', by: REVIEWER });
  await waitForTurnEnd(h.store, id, 1, 60_000);

  // The injected context waits for the next step; the followup wakes the session and both enter turn 2.
  await sessions.inject(id, INJECTED, { source: 'ops-bot' });
  await sessions.followup(id, 'Anything to know? Deploys might be frozen.');
  await waitForTurnEnd(h.store, id, 2, 60_000);

  await sessions.compact(id);
  await waitForState(handle, (s) => s.compactions === 1 && s.status === 'idle', 60_000);
  await sessions.followup(id, 'Still there after the compaction?');
  await waitForTurnEnd(h.store, id, 3, 60_000);
}
