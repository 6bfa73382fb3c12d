// Two agents on one real worker (startWorker({ agents })), on the scripted provider: each session's requests carry
// its own agent's instructions, model and tools; the log names the agent and version; a session's overrides are
// checked by the worker, logged with who set them, and reach the provider from the next step — in the same turn
// when set while a tool runs; an unknown agent fails the start and leaves no log.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/agents/define-agent.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { SessionClient } from '../../src/client/session-client.js';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import { DhError, type EventOf, type SessionEvent } from '../../src/core/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { waitForTurnEnd } from '../helpers/session-harness.js';
import { temporal } from '../helpers/temporal-cli.js';

const SMALL = 'agents-small';
const LARGE = 'agents-large';
const RUN = `agents-${process.pid}-${Date.now().toString(36)}`;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

interface ChatBody {
  model: string;
  temperature?: number;
  messages: { role: string; content: string | null }[];
  tools?: { function: { name: string } }[];
}

/** Resolves the current `release` when the held tool is called; the test lets it finish. */
let toolCalled: () => void = () => undefined;
let releaseTool: () => void = () => undefined;

const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Look up an order by its id.',
  parameters: z.object({ id: z.string().describe('the order id') }),
  idempotent: true,
  readOnly: true,
  run: async ({ id }) => {
    const released = new Promise<void>((resolve) => (releaseTool = resolve));
    toolCalled();
    await released;
    return `order ${id}: shipped`;
  },
});
const classify = defineTool({
  name: 'classify',
  description: 'Classify a ticket.',
  parameters: z.object({ text: z.string() }),
  run: ({ text }) => (text.includes('refund') ? 'billing' : 'general'),
});
const support = defineAgent({
  name: 'support',
  description: 'answers order questions',
  instructions: 'You are the support agent.',
  model: SMALL,
  tools: [lookupOrder, classify],
});
const triage = defineAgent({
  name: 'triage',
  instructions: 'You are the triage agent.',
  model: LARGE,
  temperature: 0,
  tools: [classify],
  limits: { maxStepsPerTurn: 7 },
});

describe('agents per session on one worker', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let connection: Connection;
  let stopWorker: () => Promise<void>;
  let store: SqliteSessionStore;
  let sessions: SessionClient;
  const lines: string[] = [];

  const chatBodies = (): ChatBody[] =>
    provider
      .requests()
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map((r) => JSON.parse(r.body) as ChatBody);
  const bodiesOf = (text: string) =>
    chatBodies().filter((b) => b.messages.some((m) => m.role === 'user' && (m.content ?? '').includes(text)));
  const toolNames = (body: ChatBody | undefined) => body?.tools?.map((t) => t.function.name) ?? [];
  const systemOf = (body: ChatBody | undefined) => body?.messages.find((m) => m.role === 'system')?.content;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-agents-'));
    provider = await startScriptedProvider({
      script: {
        models: [SMALL, LARGE],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'where is order' },
            toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"id":"A7"}' }],
          },
          { match: { lastUserContains: 'where is order' }, text: 'Order A7 has shipped.' },
        ],
        default: { text: 'noted' },
      },
    });
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const config = readWorkerConfig({
      DH_HOME: dir,
      DH_STORE: join(dir, 'sessions.db'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: `${RUN}-queue`,
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: SMALL,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });
    const log = createLogger({ level: 'info', write: (line) => lines.push(line) });
    const worker = await startWorker({ config, agents: [support, triage], log });
    const running = worker.run();
    stopWorker = async () => {
      await worker.shutdown();
      await running;
      await worker.close();
    };
    store = SqliteSessionStore.open(config.store);
    sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
      taskQueue: config.taskQueue,
    });
  });
  afterAll(async () => {
    releaseTool(); // a failed test may leave the tool waiting, and the worker's shutdown with it
    await stopWorker?.();
    await store?.close();
    await connection?.close();
    await provider?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("logs the SDK's lines through the worker's logger, without its warning about the activity-only queues", () => {
    expect(lines.some((line) => line.includes('"source":"temporal"'))).toBe(true);
    expect(lines.filter((line) => line.includes('No workflows registered'))).toEqual([]);
  });

  it("each session's requests carry its agent's instructions, model and tools; the log names the agent", async () => {
    const a = `${RUN}-a`;
    const b = `${RUN}-b`;
    await sessions.open(b, { agent: 'triage' });
    await sessions.followup(b, 'triage: my refund is late');
    await sessions.followup(a, 'hello support', { start: true }); // no agent named: the default, the first listed
    const [eventsA, eventsB] = await Promise.all([waitForTurnEnd(store, a, 1), waitForTurnEnd(store, b, 1)]);

    const [toA] = bodiesOf('hello support');
    const [toB] = bodiesOf('triage: my refund is late');
    expect([toA?.model, systemOf(toA), toolNames(toA)]).toEqual([
      SMALL,
      'You are the support agent.',
      ['lookup_order', 'classify'],
    ]);
    expect([toB?.model, toB?.temperature, systemOf(toB), toolNames(toB)]).toEqual([
      LARGE,
      0,
      'You are the triage agent.',
      ['classify'],
    ]);
    expect(eventsA[0]).toMatchObject({
      type: 'session/start',
      formatVersion: 2,
      agent: { name: 'support', version: support.version },
    });
    expect(eventsB[0]).toMatchObject({ agent: { name: 'triage', version: triage.version } });
    expect(ofType(eventsB, 'request/header')[0]?.header.agent).toEqual({ name: 'triage', version: triage.version });
    // The agent's limits reach the workflow (its own limits would win over them).
    expect((await sessions.state(b)).turn).toBe(1);
  });

  it('overrides are checked, logged with who set them, and apply from the next step of the running turn', async () => {
    const id = `${RUN}-over`;
    const called = new Promise<void>((resolve) => (toolCalled = resolve));
    await sessions.followup(id, 'where is order A7?', { start: true, agent: 'support' });
    await called; // the first step's answer called the tool, which now waits
    await expect(sessions.configure(id, { model: 'agents-premium' })).rejects.toThrow(
      /does not serve the model "agents-premium"; it serves agents-small, agents-large/,
    );
    await expect(sessions.configure(id, { tools: ['refund'] })).rejects.toThrow(/has no tool "refund"/);
    const set = await sessions.configure(
      id,
      { model: LARGE, systemAppend: 'Answer in one line.', tools: ['lookup_order'] },
      { source: 'billing-bot' },
    );
    expect(set).toEqual({
      overrides: { model: LARGE, systemAppend: 'Answer in one line.', tools: ['lookup_order'] },
      changed: true,
    });
    releaseTool();
    const events = await waitForTurnEnd(store, id, 1);
    const [first, second] = bodiesOf('where is order A7?');
    expect([first?.model, systemOf(first), toolNames(first)]).toEqual([
      SMALL,
      'You are the support agent.',
      ['lookup_order', 'classify'],
    ]);
    expect([second?.model, systemOf(second), toolNames(second)]).toEqual([
      LARGE,
      'You are the support agent.\n\nAnswer in one line.',
      ['lookup_order'],
    ]);
    const [logged] = ofType(events, 'agent/overrides');
    expect(logged).toMatchObject({ source: 'billing-bot', overrides: { model: LARGE } });
    const headers = ofType(events, 'request/header');
    expect(headers.map((h) => [h.step, h.reason, h.header.agent?.overrides])).toEqual([
      [1, 'initial', undefined],
      [2, 'change', logged?.overridesId],
    ]);
    // The same set again changes nothing and logs nothing; `{}` clears them.
    expect(
      (await sessions.configure(id, { model: LARGE, systemAppend: 'Answer in one line.', tools: ['lookup_order'] }))
        .changed,
    ).toBe(false);
    expect(await sessions.configure(id, {})).toEqual({ overrides: {}, changed: true });
    expect(ofType(await store.read(id), 'agent/overrides')).toHaveLength(2);
    // The audit re-derives every request and finds each header naming the agent and applying what was in force.
    const report = await auditSession({ store, sessionId: id, client: sessions.client });
    expect(report.failures).toEqual([]);
    expect(report.summary.agent).toMatchObject({ name: 'support', versions: [support.version], overrides: 2 });
  });

  it('the raw temporal CLI starts a session of an agent with overrides, as a workflow input field', async () => {
    const id = `${RUN}-cli`;
    const input = { sessionId: id, agent: 'triage', overrides: { systemAppend: 'Reply in one word.' } };
    const started = await temporal(
      'workflow',
      'start',
      '--type',
      'agentSession',
      '--task-queue',
      `${RUN}-queue`,
      '--workflow-id',
      `session-${id}`,
      '--input',
      JSON.stringify(input),
    );
    expect(started.code, started.output).toBe(0);
    const signalled = await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      `session-${id}`,
      '--name',
      'followup',
      '--input',
      JSON.stringify({ content: 'cli: classify this' }),
    );
    expect(signalled.code, signalled.output).toBe(0);
    const events = await waitForTurnEnd(store, id, 1);
    expect(events[0]).toMatchObject({ agent: { name: 'triage' } });
    expect(ofType(events, 'agent/overrides')[0]).toMatchObject({
      source: 'start',
      overrides: { systemAppend: 'Reply in one word.' },
    });
    expect(systemOf(bodiesOf('cli: classify this')[0])).toBe('You are the triage agent.\n\nReply in one word.');
  });

  it('an unknown agent fails the start naming the agents served, and leaves no log', async () => {
    const id = `${RUN}-unknown`;
    const handle = await sessions.open(id, { agent: 'billing' });
    const failure = await handle.result().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause;
    expect(cause?.message).toContain('no agent named "billing" on this worker; it serves support, triage');
    await expect(store.head(id)).rejects.toSatisfy((e) => e instanceof DhError && e.code === 'SESSION_NOT_FOUND');
  });
});
