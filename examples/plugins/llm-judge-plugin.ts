// An example `dh eval` judge: asks a model of any OpenAI-compatible endpoint to score the candidate answer against
// the recorded one. Run the eval's worker with it:
//   const judge = llmJudgePlugin({ baseURL, apiKey, model: 'deepseek-chat' });
//   startWorker({ config, plugins: [...defaultPlugins(config), judge] })
// (in a project of its own, from `durable-harness/worker`: docs/building-agents.md)
import OpenAI from 'openai';
import { z } from 'zod';
import type { JudgeInput, JudgeVerdict } from '../../src/eval/eval-judge.js';
import type { AnswerFacts } from '../../src/eval/step-diff.js';
import type { Plugin } from '../../src/plugins/plugin.js';

export interface LlmJudgeOptions {
  readonly baseURL: string;
  readonly apiKey: string;
  readonly model: string;
  /** The plugin's (and so the judge's) name in reports; default `llm-judge`. */
  readonly name?: string;
}

const Verdict = z.strictObject({ score: z.number().min(0).max(1), reason: z.string().min(1) });

const INSTRUCTIONS =
  'You compare two answers an agent gave to the same request: the recorded one (A) and a candidate (B). ' +
  'Score how well B does the job A did, from 0 (useless) to 1 (as good or better). Answer with JSON only: ' +
  '{"score": <number 0..1>, "reason": "<one sentence>"}.';

/**
 * The judge's own call is outside every session log: it judges, it never becomes model-visible to a session. A
 * reply that is not the JSON asked for throws, and `dh eval` records that as the judge's error for the step.
 */
export function llmJudgePlugin(options: LlmJudgeOptions): Plugin {
  const client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey, maxRetries: 1 });
  return {
    name: options.name ?? 'llm-judge',
    async judge(input: JudgeInput): Promise<JudgeVerdict> {
      const lastUser = [...input.request.messages].reverse().find((m) => m.role === 'user');
      const completion = await client.chat.completions.create({
        model: options.model,
        temperature: 0,
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          {
            role: 'user',
            content: [
              `The request's last user message: ${JSON.stringify(lastUser?.content ?? null)}`,
              `A (recorded): ${describe(input.source)}`,
              `B (candidate): ${describe(input.candidate)}`,
            ].join('\n\n'),
          },
        ],
      });
      const text = completion.choices[0]?.message.content ?? '';
      const json = /\{[\s\S]*\}/.exec(text)?.[0];
      const parsed = json !== undefined ? Verdict.safeParse(safeJson(json)) : null;
      if (!parsed?.success)
        throw new Error(`the judge model did not answer with {score, reason}: ${text.slice(0, 200)}`);
      return parsed.data;
    },
  };
}

function describe(answer: AnswerFacts): string {
  const calls = answer.toolCalls.map((c) => `${c.name}(${c.arguments})`).join(', ');
  return `${JSON.stringify(answer.content ?? '')}${calls !== '' ? `; tool calls: ${calls}` : ''}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
