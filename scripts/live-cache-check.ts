// Live check of DeepSeek's prefix cache through the real adapter: a few requests sharing a growing prefix,
// printing the cache-read tokens DeepSeek reports for each (and the scripted provider's prediction for the
// same bodies when its simulator is present). Costs a few cents of tokens; not part of `npm test`.
//   DEEPSEEK_API_KEY=... npm run live            (optional: DH_LIVE_MODEL, DH_LIVE_PAUSE_MS)
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BuiltRequest } from '../src/core/build-request.js';
import { deepFreeze } from '../src/core/deep-freeze.js';
import type { Message } from '../src/core/messages.js';
import { callModel, type ModelReply } from '../src/providers/call-model.js';
import { ProviderError } from '../src/providers/provider-error.js';
import { apiKeyFromEnv, resolveProfile } from '../src/providers/provider-profiles.js';

const profile = resolveProfile('deepseek');
const model = process.env.DH_LIVE_MODEL ?? 'deepseek-v4-flash';
// DeepSeek builds its disk cache asynchronously ("best effort", seconds): give it time between requests.
const pauseMs = Number(process.env.DH_LIVE_PAUSE_MS ?? 3000);

/** Predicts cache reads for the same bodies with the scripted provider's simulator, when it exists. */
interface Simulator {
  predict(body: string, reply: ModelReply): number;
}

async function loadSimulator(): Promise<Simulator | string> {
  const source = new URL('../src/providers/prefix-cache.ts', import.meta.url);
  if (!existsSync(fileURLToPath(source))) return 'no simulator (src/providers/prefix-cache.ts is absent)';
  try {
    // Loaded by URL, not by a static specifier, so this script type-checks without the simulator.
    const cacheModule = (await import(source.href)) as {
      PrefixCache: new (mode: 'deepseek') => {
        process(input: unknown, output?: readonly number[]): { hitTokens: number };
      };
      canonicalInput: (request: unknown) => unknown;
      canonicalOutput: (turn: {
        content: string;
        reasoning?: string;
        toolCalls: readonly unknown[];
      }) => readonly number[];
    };
    const requestSource = new URL('../src/providers/chat-completion-request.ts', import.meta.url);
    const requestModule = (await import(requestSource.href)) as {
      ChatCompletionRequest: { parse(value: unknown): unknown };
    };
    const cache = new cacheModule.PrefixCache('deepseek');
    return {
      predict(body, reply) {
        const request = requestModule.ChatCompletionRequest.parse(JSON.parse(body));
        const output = cacheModule.canonicalOutput({
          content: reply.content ?? '',
          ...(reply.reasoning !== undefined ? { reasoning: reply.reasoning } : {}),
          toolCalls: reply.toolCalls,
        });
        return cache.process(cacheModule.canonicalInput(request), output).hitTokens;
      },
    };
  } catch (error) {
    return `simulator unavailable: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function request(messages: Message[], step: number): BuiltRequest {
  // A long, fixed system prompt so the shared prefix is well above DeepSeek's 64-token cache granularity.
  const system = [
    'You are a terse assistant used to test prompt caching. Answer in one short sentence.',
    ...Array.from(
      { length: 40 },
      (_, i) => `Reference note ${i + 1}: the archive shelf ${i + 1} holds volumes ${i * 7} to ${i * 7 + 6}.`,
    ),
  ].join('\n');
  const built: BuiltRequest = {
    sessionId: 'live-cache-check',
    turn: step,
    step: 1,
    config: { provider: 'deepseek', model, thinking: 'disabled', maxTokens: 64, temperature: 0, includeUsage: true },
    system,
    tools: [],
    messages,
  };
  deepFreeze(built);
  return built;
}

async function main(): Promise<void> {
  if (!process.env[profile.apiKeyEnv]) {
    console.log(`live-cache-check needs ${profile.apiKeyEnv} to talk to DeepSeek; it is not set, so nothing was sent.`);
    return;
  }
  const apiKey = apiKeyFromEnv(profile);
  const simulator = await loadSimulator();
  if (typeof simulator === 'string') console.log(simulator);
  const questions = [
    'Which volumes are on shelf 3?',
    'And on shelf 12?',
    'Which shelf holds volume 100?',
    'How many shelves are there?',
  ];
  const messages: Message[] = [];
  console.log(`model ${model}, base URL ${profile.baseURL}, ${pauseMs} ms between requests`);
  console.log('req  bytes  digest            prompt  cacheRead  uncached  simulated');
  for (const [i, question] of questions.entries()) {
    if (i > 0) await sleep(pauseMs);
    messages.push({ role: 'user', content: question });
    const result = await callModel({ request: request([...messages], i + 1), profile, apiKey, idleTimeoutMs: 120_000 });
    const usage = result.usage;
    const predicted = typeof simulator === 'string' ? '-' : String(simulator.predict(result.wire.body, result.message));
    console.log(
      [
        String(i + 1).padStart(3),
        String(result.wire.bytes).padStart(6),
        ` ${result.wire.digest.slice(7, 23)}`,
        String(usage ? usage.cacheRead + usage.inputUncached : '?').padStart(7),
        String(usage?.cacheRead ?? '?').padStart(10),
        String(usage?.inputUncached ?? '?').padStart(9),
        predicted.padStart(10),
      ].join(' '),
    );
    messages.push({ role: 'assistant', content: result.message.content });
  }
}

main().catch((error: unknown) => {
  if (error instanceof ProviderError) console.error(`live-cache-check failed: ${error.code}: ${error.message}`);
  else console.error('live-cache-check failed:', error);
  process.exitCode = 1;
});
