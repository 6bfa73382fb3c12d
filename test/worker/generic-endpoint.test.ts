// A generic OpenAI-compatible endpoint through the real worker (startWorker, configured from DH_*
// variables) on the run's Temporal server: the context window it discovers from a server that answers
// GET /v1/models as llama.cpp does, or DH_CONTEXT_WINDOW without probing for it; the max_tokens it records and
// sends; the window driving compaction pressure; and a length-cut answer ending its turn `truncated`.
// Chat completions go through the llama.cpp stand-in to the scripted provider.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import { SessionClient } from '../../src/client/session-client.js';
import { readWorkerConfig, type WorkerConfig } from '../../src/config/worker-config.js';
import { COMPACTION_INSTRUCTION, type EventOf, type SessionEvent } from '../../src/core/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { systemPromptPlugin } from '../../src/plugins/basic-plugins.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { waitForState, waitForTurnEnd } from '../helpers/session-harness.js';

const MODEL = 'local-model';
const KEY_ENV = 'DH_GENERIC_ENDPOINT_TEST_KEY';
/** What the stand-in reports as llama.cpp's runtime context (`meta.n_ctx`); the model trained on more. */
const N_CTX = 8192;
const LOREM = 'lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(30);

/** Session ids are workflow ids on the run's shared Temporal server: unique to this file's run. */
const RUN = `generic-${process.pid}-${Date.now().toString(36)}`;
const DISCOVERED = `${RUN}-discovered`;
const CUT = `${RUN}-cut`;
const CONFIGURED = `${RUN}-configured`;
const PRESSURE = `${RUN}-pressure`;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

interface LlamaStandIn {
  readonly baseURL: string;
  /** GET /v1/models requests answered. */
  modelsAsked: number;
  close(): Promise<void>;
}

/** Answers GET /v1/models as llama.cpp does (its one model, meta of the loaded model); proxies the rest. */
async function startLlamaStandIn(upstreamBaseURL: string): Promise<LlamaStandIn> {
  const upstream = new URL(upstreamBaseURL);
  const state = { modelsAsked: 0 };
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && new URL(req.url ?? '/', 'http://x').pathname === '/v1/models') {
      state.modelsAsked++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          models: [{ name: 'models/local.gguf', model: 'models/local.gguf', type: 'model' }],
          data: [
            {
              id: 'models/local.gguf',
              object: 'model',
              created: 1_700_000_000,
              owned_by: 'llamacpp',
              meta: { vocab_type: 2, n_vocab: 151_936, n_ctx: N_CTX, n_ctx_train: 131_072, n_embd: 2048 },
            },
          ],
        }),
      );
      return;
    }
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    get modelsAsked() {
      return state.modelsAsked;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface RunningWorker {
  readonly config: WorkerConfig;
  readonly sessions: SessionClient;
  readonly store: SqliteSessionStore;
  /** The worker's start-up log lines (JSON). */
  readonly lines: readonly string[];
  stop(): Promise<void>;
}

describe('a generic endpoint through the real worker', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let llama: LlamaStandIn;
  let connection: Connection;
  let counter = 0;

  /** startWorker as `dh worker` runs it, configured from DH_* variables, on the run's Temporal server. */
  async function runWorker(extra: NodeJS.ProcessEnv): Promise<RunningWorker> {
    const home = join(dir, `home-${++counter}`);
    const config = readWorkerConfig({
      DH_HOME: home,
      DH_STORE: join(home, 'sessions.db'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: `generic-${process.pid}-${counter}-${Date.now()}`,
      DH_PROVIDER: 'llama',
      DH_BASE_URL: llama.baseURL,
      DH_MODEL: MODEL,
      DH_API_KEY_ENV: KEY_ENV,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...extra,
    });
    const lines: string[] = [];
    const log = createLogger({ level: 'info', write: (line) => lines.push(line) });
    const worker = await startWorker({ config, plugins: [systemPromptPlugin('You are a test agent.')], log });
    const running = worker.run();
    const store = SqliteSessionStore.open(config.store);
    const sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
      taskQueue: config.taskQueue,
    });
    return {
      config,
      sessions,
      store,
      lines,
      stop: async () => {
        await worker.shutdown();
        await running;
        await worker.close();
        await store.close();
      },
    };
  }

  /** The chat-completion bodies the provider received whose last message contains `text`. */
  const bodiesWith = (text: string) =>
    provider
      .requests()
      .filter((r) => r.path.endsWith('/chat/completions') && r.body.includes(text))
      .map((r) => JSON.parse(r.body) as { max_tokens?: number; temperature?: number });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-generic-endpoint-'));
    process.env[KEY_ENV] = 'sk-local-not-a-real-key';
    provider = await startScriptedProvider({
      script: {
        models: [MODEL],
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'hello' }, text: 'hi', repeat: 5 },
          { match: { lastUserContains: 'cut short' }, text: 'Once upon a time there was a', finishReason: 'length' },
          { match: { lastUserContains: COMPACTION_INSTRUCTION.slice(0, 40) }, text: 'The user sent long notes.' },
          { match: { lastUserContains: 'note' }, text: 'noted', repeat: 20 },
        ],
      },
    });
    llama = await startLlamaStandIn(provider.url);
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await connection?.close();
    await llama?.close();
    await provider?.close();
    delete process.env[KEY_ENV];
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('without DH_CONTEXT_WINDOW or DH_MAX_TOKENS', () => {
    let w: RunningWorker;
    let asked: number;
    beforeAll(async () => {
      asked = llama.modelsAsked;
      w = await runWorker({});
    });
    afterAll(async () => w?.stop());

    it('records the window the server reports, a quarter of it as max_tokens, and sends that limit', async () => {
      expect(llama.modelsAsked).toBe(asked + 1);
      expect(w.lines.join('\n')).toContain(
        `context window of \\"${MODEL}\\": ${N_CTX} tokens (GET ${llama.baseURL}/models data[id=models/local.gguf].meta.n_ctx)`,
      );
      await w.sessions.followup(DISCOVERED, 'hello there', { start: true });
      const events = await waitForTurnEnd(w.store, DISCOVERED, 1);
      const [header] = ofType(events, 'request/header');
      expect(header?.header.contextWindow).toBe(N_CTX);
      expect(header?.header.config).toEqual({
        provider: 'llama',
        model: MODEL,
        includeUsage: true,
        nullContentAs: 'empty-string',
        maxTokens: 2048,
      });
      expect(bodiesWith('hello there').map((b) => b.max_tokens)).toEqual([2048]);
      // The audit derives the same body and reports the window the header recorded, not a guess of its own.
      const report = await auditSession({ store: w.store, sessionId: DISCOVERED });
      expect(report.ok, JSON.stringify(report.summary)).toBe(true);
      expect(report.rows.map((r) => [r.profileSource, r.contextWindow])).toEqual([['generic', N_CTX]]);
    });

    it('an answer cut at its output limit ends the turn `truncated`, and the state says so', async () => {
      await w.sessions.followup(CUT, 'cut short, please', { start: true });
      const events = await waitForTurnEnd(w.store, CUT, 1);
      expect(ofType(events, 'assistant/message').map((e) => e.finishReason)).toEqual(['length']);
      expect(ofType(events, 'turn/end')).toMatchObject([
        { turn: 1, reason: 'truncated', error: { code: 'ANSWER_TRUNCATED' } },
      ]);
      const state = await waitForState(w.sessions.handle(CUT), (s) => s.lastTurnEnd !== null);
      expect(state.lastTurnEnd).toEqual({ turn: 1, reason: 'truncated', errorCode: 'ANSWER_TRUNCATED' });
      // The session goes on: the next followup runs and completes.
      await w.sessions.followup(CUT, 'hello again');
      const after = await waitForTurnEnd(w.store, CUT, 2);
      expect(ofType(after, 'turn/end').map((e) => e.reason)).toEqual(['truncated', 'completed']);
    });
  });

  describe('with DH_CONTEXT_WINDOW and DH_MAX_TOKENS', () => {
    let w: RunningWorker;
    let asked: number;
    beforeAll(async () => {
      asked = llama.modelsAsked;
      w = await runWorker({ DH_CONTEXT_WINDOW: '3000', DH_MAX_TOKENS: '321', DH_TEMPERATURE: '0' });
    });
    afterAll(async () => w?.stop());

    it('records both (and DH_TEMPERATURE) asking the server only its model list, and sends them', async () => {
      expect(llama.modelsAsked).toBe(asked + 1);
      expect(provider.requests().filter((r) => r.path === '/props' || r.path === '/api/show')).toEqual([]);
      await w.sessions.followup(CONFIGURED, 'hello, configured', { start: true });
      const events = await waitForTurnEnd(w.store, CONFIGURED, 1);
      const [header] = ofType(events, 'request/header');
      expect(header?.header).toMatchObject({
        contextWindow: 3000,
        config: { maxTokens: 321, temperature: 0, nullContentAs: 'empty-string' },
      });
      const bodies = bodiesWith('hello, configured');
      expect(bodies.map((b) => [b.max_tokens, b.temperature])).toEqual([[321, 0]]);
    });

    it('the configured window drives compaction pressure', async () => {
      const id = PRESSURE;
      await w.sessions.open(id);
      let events: SessionEvent[] = [];
      // Each note is ~400 tokens: against 3,000 tokens (compacting at 80%) the log fills within a few turns.
      for (let turn = 1; turn <= 8 && ofType(events, 'compact/start').length === 0; turn++) {
        await w.sessions.followup(id, `note ${turn}: ${LOREM}`);
        events = await waitForTurnEnd(w.store, id, turn);
      }
      expect(ofType(events, 'turn/end').every((e) => e.reason === 'completed')).toBe(true);
      const triggers = ofType(events, 'compact/start').map((e) => e.trigger);
      expect(triggers.length, 'a compaction before the 8th turn').toBeGreaterThan(0);
      expect(['prune', 'pressure']).toContain(triggers[0]);
      // The window the pressure check read is the one every header of the session records.
      expect(ofType(events, 'request/header').every((e) => e.header.contextWindow === 3000)).toBe(true);
    });
  });
});
