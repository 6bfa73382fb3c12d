// The example LLM judge of docs/eval.md against a real HTTP endpoint (the scripted provider): its verdict is the
// model's JSON, and a model that answers anything else is the judge's error, recorded by runJudges as data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmJudgePlugin } from '../../examples/plugins/llm-judge-plugin.js';
import { runJudges, type EvalJudge, type JudgeInput } from '../../src/eval/eval-judge.js';
import { diffStep, type AnswerFacts } from '../../src/eval/step-diff.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';

const answer = (content: string): AnswerFacts => ({
  content,
  toolCalls: [],
  finishReason: 'stop',
  usage: null,
  costUsd: null,
  latencyMs: 10,
});
const source = answer('The build is green.');
const candidate = answer('The build passed.');
const input: JudgeInput = {
  sessionId: 's',
  turn: 1,
  step: 1,
  request: {
    sessionId: 's',
    turn: 1,
    step: 1,
    config: { provider: 'p', model: 'm' },
    tools: [],
    messages: [{ role: 'user', content: 'Is the build green?' }],
  },
  source,
  candidate,
  diff: diffStep(source, candidate),
};

describe('example: the LLM judge plugin', () => {
  let provider: ScriptedProvider;
  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: {
        models: ['judge-model'],
        replies: [
          { text: 'Here it is: {"score": 0.9, "reason": "Same meaning, other words."}' },
          { text: 'I think they are about the same.' },
        ],
      },
    });
  });
  afterAll(async () => provider?.close());

  it('scores with the model, and records a reply that is not a verdict as the judge error', async () => {
    const plugin = llmJudgePlugin({ baseURL: provider.url, apiKey: 'sk-test', model: 'judge-model' });
    const judge: EvalJudge = { name: plugin.name, judge: (i) => plugin.judge?.(i) ?? { score: 0, reason: 'none' } };
    expect(await runJudges([judge], input)).toEqual([
      { judge: 'llm-judge', score: 0.9, reason: 'Same meaning, other words.' },
    ]);
    const [failed] = await runJudges([judge], input);
    expect(failed).toMatchObject({ judge: 'llm-judge', score: null });
    expect(failed?.error).toContain('the judge model did not answer with {score, reason}');
    // The judge saw both answers and the request's question.
    const body = JSON.parse(provider.requests()[0]?.body ?? '{}') as { messages: { content: string }[] };
    expect(body.messages[1]?.content).toContain('Is the build green?');
    expect(body.messages[1]?.content).toContain('The build passed.');
  });
});
