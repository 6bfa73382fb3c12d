// The scripted provider of a test harness: the script as given, serving every model the agents name (with a
// context window, so the worker assumes none), and what it was sent, raw or read as chat-completion requests.
import type { Agent } from '../agents/define-agent.js';
import { ChatCompletionRequest, contentText } from '../providers/chat-completion-request.js';
import type { Script } from '../scripted-provider/script.js';
import { startScriptedProvider, type RecordedRequest } from '../scripted-provider/start-scripted-provider.js';

/** The model a harness's worker is configured with when no agent names one (DH_MODEL). */
export const TEST_MODEL = 'test-model';
const TEST_CONTEXT_WINDOW = 128_000;

/** One chat-completion request the worker sent, read: who it was for is in its model, system prompt and tools. */
export interface ChatRequest {
  /** Its place among every request the provider received (`requests()[index]`). */
  readonly index: number;
  readonly model: string;
  /** The system message's text ('' without one). */
  readonly system: string;
  /** The names of the tools it offered, in order. */
  readonly tools: readonly string[];
  /** The text of its last user message. */
  readonly lastUser: string;
  readonly body: ChatCompletionRequest;
}

export interface TestProvider {
  /** Base URL with `/v1` (the worker's DH_BASE_URL). */
  readonly url: string;
  /** Every request received, in arrival order, byte for byte, each with its answer once that started. */
  requests(): readonly RecordedRequest[];
  /** The chat-completion requests among them, read. */
  chatRequests(): readonly ChatRequest[];
  /** Lets the streams held at `key` (a reply's `hold`) go on. */
  release(key: string): void;
  close(): Promise<void>;
}

/** Every model the provider serves: the script's, the worker's and each agent's. */
export function servedModels(script: Script, agents: readonly Agent[], model: string): string[] {
  return [...new Set([model, ...agents.flatMap((agent) => agent.model ?? []), ...(script.models ?? [])])];
}

export async function startTestProvider(script: Script, models: readonly string[]): Promise<TestProvider> {
  const provider = await startScriptedProvider({
    script: {
      ...script,
      models: [...models],
      contextWindows: {
        ...Object.fromEntries(models.map((model) => [model, TEST_CONTEXT_WINDOW])),
        ...script.contextWindows,
      },
    },
  });
  return {
    url: provider.url,
    requests: () => provider.requests(),
    chatRequests: () =>
      provider
        .requests()
        .filter((request) => request.method === 'POST' && /\/chat\/completions\/?$/.test(request.path))
        .flatMap((request) => {
          const parsed = ChatCompletionRequest.safeParse(safeJson(request.body));
          return parsed.success ? [chatRequest(request.index, parsed.data)] : [];
        }),
    release: (key) => provider.release(key),
    close: () => provider.close(),
  };
}

function chatRequest(index: number, body: ChatCompletionRequest): ChatRequest {
  const system = body.messages.find((message) => message.role === 'system');
  const lastUser = body.messages.findLast((message) => message.role === 'user');
  return {
    index,
    model: body.model,
    system: system ? contentText(system.content) : '',
    tools: (body.tools ?? []).map((tool) => tool.function.name),
    lastUser: lastUser ? contentText(lastUser.content) : '',
    body,
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
