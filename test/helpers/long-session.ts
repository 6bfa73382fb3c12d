// A long scripted, tool-using session on its own Temporal dev server (which suggests continue-as-new
// early), with a small context window so compaction keeps requests bounded. Used by a CI-size test
// and by the benchmark's full 1,000-turn run.
import { COMPACTION_INSTRUCTION, type SessionEvent } from '../../src/core/index.js';
import { checkHistoryMirror } from '../../src/client/history-mirror.js';
import { startDevServer } from '../../src/local-stack/dev-server.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { echoTool } from './test-tools.js';
import { expectProviderSawTheLog, startScenarioRuntime, waitForTurnEnd } from './scenario-runtime.js';

export interface LongSessionOptions {
  readonly cliPath: string;
  readonly workflowBundlePath?: string;
  readonly turns: number;
  /** Tokens; small so compaction happens every few turns. */
  readonly contextWindow?: number;
  /** History events after which Temporal suggests continue-as-new. */
  readonly suggestContinueAsNewAt?: number;
}

export interface LongSessionReport {
  readonly turns: number;
  readonly completedTurns: number;
  readonly compactions: number;
  readonly continueAsNew: number;
  readonly maxRequestTokens: number;
  readonly contextWindow: number;
  readonly maxHistoryEvents: number;
  readonly maxHistoryBytes: number;
  readonly logEvents: number;
  readonly wallMs: number;
  /** Every followup claimed exactly once, in order. */
  readonly claimedInOrder: boolean;
  readonly mirrorProblem: string | null;
}

export async function runLongSession(options: LongSessionOptions): Promise<LongSessionReport> {
  const contextWindow = options.contextWindow ?? 3_000;
  const server = await startDevServer({
    cliPath: options.cliPath,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': options.suggestContinueAsNewAt ?? 400 },
  });
  const text = (i: number) => `task ${i}: echo the word "w${i}" and report`;
  const runtime = await startScenarioRuntime({
    address: server.address,
    namespace: server.namespace,
    ...(options.workflowBundlePath !== undefined ? { workflowBundlePath: options.workflowBundlePath } : {}),
    contextWindow,
    tools: [echoTool],
    script: {
      cache: 'deepseek',
      mode: 'match',
      replies: [
        {
          match: { lastUserContains: COMPACTION_INSTRUCTION.slice(0, 40) },
          text: 'Earlier tasks each echoed one word; all succeeded.',
          repeat: 100_000,
        },
        ...Array.from({ length: options.turns }, (_, k) => [
          {
            match: { lastUserContains: `task ${k + 1}:` },
            toolCalls: [
              { id: `c${k + 1}`, name: 'echo', arguments: JSON.stringify({ text: `w${k + 1} `.repeat(40) }) },
            ],
          },
          {
            match: { lastUserContains: `task ${k + 1}:` },
            text: `Done with task ${k + 1}: the echo returned w${k + 1}.`,
          },
        ]).flat(),
      ],
    },
  });
  const started = Date.now();
  try {
    const handle = await runtime.start('long');
    const batch = 25;
    for (let sent = 0; sent < options.turns;) {
      const upTo = Math.min(options.turns, sent + batch);
      for (let i = sent + 1; i <= upTo; i++)
        await handle.signal(followupSignal, { content: text(i), messageId: `t-${i}` });
      sent = upTo;
      // Keep some messages waiting while runs hand over: wait until the previous batch is half done.
      await waitForTurnEnd(runtime.store, 'long', Math.max(1, sent - Math.floor(batch / 2)), 600_000);
    }
    const events: SessionEvent[] = await waitForTurnEnd(runtime.store, 'long', options.turns, 600_000);
    const wallMs = Date.now() - started;
    const claimed = events.flatMap((e) => (e.type === 'inbox/claim' ? e.messageIds : []));
    let maxHistoryEvents = 0;
    let maxHistoryBytes = 0;
    let runs = 0;
    let runId: string | undefined = (await handle.describe()).runId;
    while (runId) {
      const history = await runtime.client.workflow.getHandle(sessionWorkflowId('long'), runId).fetchHistory();
      runs++;
      maxHistoryEvents = Math.max(maxHistoryEvents, history.events?.length ?? 0);
      maxHistoryBytes = Math.max(maxHistoryBytes, JSON.stringify(history).length);
      runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    }
    await expectProviderSawTheLog(runtime, ['long']);
    const mirror = await checkHistoryMirror(runtime.client, runtime.store, 'long');
    return {
      turns: options.turns,
      completedTurns: events.filter((e) => e.type === 'turn/end' && e.reason === 'completed').length,
      compactions: events.filter((e) => e.type === 'compact/end' && e.outcome === 'applied').length,
      continueAsNew: runs - 1,
      maxRequestTokens: Math.max(
        0,
        ...events.flatMap((e) =>
          e.type === 'assistant/message' && e.usage ? [e.usage.inputUncached + e.usage.cacheRead] : [],
        ),
      ),
      contextWindow,
      maxHistoryEvents,
      maxHistoryBytes,
      logEvents: events.length,
      wallMs,
      claimedInOrder:
        JSON.stringify(claimed) === JSON.stringify(Array.from({ length: options.turns }, (_, i) => `t-${i + 1}`)),
      mirrorProblem: mirror.problem,
    };
  } finally {
    await runtime.stop();
    await server.stop();
  }
}
