// What a chaos trial's session says: the followups, their scripted replies (two tool calls, then an
// answer), and in the subagent plan a first followup whose first step delegates to two children.
import { COMPACTION_INSTRUCTION, DELEGATE_TOOL_NAME } from '../../../src/core/index.js';
import type { Script } from '../../../src/scripted-provider/script.js';
import { SCENARIO_MODEL } from '../scenario-runtime.js';
import type { ChaosMessage } from './chaos-messages.js';

export const FOLLOWUPS = 5;

/** `[tag] body`: the tag is what the scripted provider matches a request by. */
export const tagged = (tag: string, body: string): string => `[${tag}] ${body}`;

/** The children of a subagent trial's `f1`: their delegation call, their task's tag, their second tool. */
export const CHILDREN = [
  { callId: 'f1-d1', tag: 'c1', wait: 'sleep', tools: ['echo', 'sleep'] },
  { callId: 'f1-d2', tag: 'c2', wait: 'nap', tools: undefined },
] as const;

export function followup(k: number, subagents: boolean): ChaosMessage {
  const content =
    k === 1 && subagents
      ? 'Task 1: have two subagents each echo a word and wait a moment, then report what they said.'
      : `Task ${k}: echo "w${k}", then ${k % 2 === 1 ? 'wait' : 'nap'} a moment and report.`;
  return { kind: 'followup', messageId: `f${k}`, content: tagged(`f${k}`, content) };
}

/** The task a child is given (its delegation call's argument). */
export function childTask(tag: string, wait: string): string {
  return tagged(tag, `Echo "${tag}-word", then ${wait === 'sleep' ? 'wait' : 'nap'} a moment and answer in one line.`);
}

export function chaosScript(subagents: boolean): Script {
  const streamed = { chunkSize: 6, chunkDelayMs: 15 } as const;
  // Each task (and each child's): one step calling two tools (an echo and a non-idempotent sleep or an
  // idempotent nap), then one answering. A retried request may take the next reply; the fallback catches the rest.
  const task = (tag: string, word: string, wait: string, working: string, done: string): Script['replies'] => [
    {
      match: { lastUserContains: `[${tag}]` },
      text: working,
      toolCalls: [
        { id: `${tag}-echo`, name: 'echo', arguments: JSON.stringify({ text: word }) },
        { id: `${tag}-${wait}`, name: wait, arguments: '{"ms":300}' },
      ],
      ...streamed,
    },
    { match: { lastUserContains: `[${tag}]` }, text: done, ...streamed },
  ];
  const delegating: Script['replies'] = [
    {
      match: { lastUserContains: '[f1]' },
      text: 'Handing task 1 to two subagents.',
      toolCalls: CHILDREN.map((c) => ({
        id: c.callId,
        name: DELEGATE_TOOL_NAME,
        arguments: JSON.stringify({ task: childTask(c.tag, c.wait), ...(c.tools ? { tools: c.tools } : {}) }),
      })),
      ...streamed,
    },
    { match: { lastUserContains: '[f1]' }, text: 'Task 1 is done: both subagents answered.', ...streamed },
    ...CHILDREN.flatMap((c) =>
      task(c.tag, `${c.tag}-word`, c.wait, `Working on ${c.tag}.`, `${c.tag} is done: echoed and waited.`),
    ),
  ];
  return {
    models: [SCENARIO_MODEL],
    mode: 'match',
    cache: 'deepseek',
    replies: [
      {
        match: { lastUserContains: COMPACTION_INSTRUCTION.slice(0, 40) },
        text: 'Summary: the user gave echo-and-wait tasks; each echo worked and each wait finished.',
        ...streamed,
        repeat: 1_000,
      },
      ...(subagents ? delegating : []),
      ...Array.from({ length: FOLLOWUPS }, (_, i) => i + 1)
        .filter((k) => !(subagents && k === 1))
        .flatMap((k) =>
          task(
            `f${k}`,
            `w${k}`,
            k % 2 === 1 ? 'sleep' : 'nap',
            `Working on task ${k}.`,
            `Task ${k} is done: echoed w${k} and waited.`,
          ),
        ),
      { text: 'Noted; carrying on with what was asked.', ...streamed, repeat: 10_000 },
    ],
  };
}
