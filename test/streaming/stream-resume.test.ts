// Live streams that survive everything, through the real stack: a session streams two long turns with tool
// calls while its worker is SIGKILLed mid-stream (the model step retried on a new worker), the workflow
// continues-as-new between the turns, and the Temporal dev server restarts mid-turn. Two consumers follow it
// the whole time and are cut off at random moments: the `eventsource` package (an SSE client nobody here
// wrote) through a proxy that drops its connection every 60–220 ms, reconnecting with Last-Event-ID by
// itself; and SessionClient.watch, broken off after a random number of frames and resumed from the last
// frame's position. Each must get every logged event once, in order, and assemble exactly the logged answers.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/console-server.js';
import { CONSOLE_UI_DIR } from '../../src/console/console-ui-dir.js';
import type { LiveMessage } from '../../src/console/console-api.js';
import type { SessionEvent } from '../../src/core/index.js';
import { freePort, startDevServer, type DevServer } from '../../src/local-stack/dev-server.js';
import { resolveTemporalCli } from '../../src/local-stack/temporal-cli.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import type { Reply } from '../../src/scripted-provider/script.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import type { DeltaChannel } from '../../src/streaming/delta-channel.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import type { StreamFrame } from '../../src/streaming/session-follower.js';
import type { StreamPosition } from '../../src/streaming/stream-position.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { TEST_MODEL } from '../helpers/session-harness.js';

const SESSION = 'resume-everything';

/** A long answer (~800 characters in ~140 chunks, ~3.5 s) that ends with a tool call unless it is a turn's last. */
function longReply(label: string, call: string | null): Reply {
  const text = Array.from({ length: 100 }, (_, i) => `${label}·${i} `).join('');
  return {
    text,
    chunkSize: 6,
    chunkDelayMs: 25,
    usageEveryChunk: true,
    ...(call !== null ? { toolCalls: [{ id: call, name: 'echo', arguments: `{"text":"${call}"}` }] } : {}),
  } as Reply;
}

/**
 * A TCP proxy that cuts every connection after a random 60–220 ms: the consumer's transport fails mid-frame
 * as a network would, and its own reconnection logic has to resume.
 */
async function choppyProxy(
  targetPort: number,
): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const hostLine = /^host: [^\r\n]*\r\n/im;
  const server: Server = createServer((client) => {
    connections++;
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    // The console checks that the Host header names its own port: the request is passed on as if made to it.
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk.toString('latin1').replace(hostLine, `Host: 127.0.0.1:${targetPort}\r\n`), 'latin1');
    });
    upstream.pipe(client);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    const timer = setTimeout(cut, 60 + Math.random() * 160);
    for (const socket of [client, upstream]) {
      socket.on('error', cut);
      socket.on('close', () => {
        clearTimeout(timer);
        sockets.delete(socket);
        cut();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy: no port');
  return {
    port: address.port,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What a consumer assembles: every event's seq, the live text per step, and each answer as it ends up. */
class Assembly {
  readonly seqs: number[] = [];
  readonly live = new Map<string, string>();
  readonly answers = new Map<string, string>();
  /** Answers whose live text was not a prefix although the stream did not say `replaced`: a lost or doubled frame. */
  readonly broken: string[] = [];
  replaced = 0;
  streamedChars = 0;
  usage = 0;

  text(turn: number, step: number, text: string, restart: boolean): void {
    const key = `${turn}.${step}`;
    if (restart) this.live.set(key, '');
    this.live.set(key, (this.live.get(key) ?? '') + text);
    this.streamedChars += text.length;
  }

  event(event: SessionEvent, replaced: boolean): void {
    this.seqs.push(event.seq);
    if (event.type !== 'assistant/message') return;
    const key = `${event.turn}.${event.step}`;
    const content = event.content ?? '';
    const live = this.live.get(key) ?? '';
    this.live.delete(key);
    if (replaced) this.replaced++;
    else if (!content.startsWith(live)) this.broken.push(`${key}: live ${JSON.stringify(live.slice(-40))}`);
    this.answers.set(key, replaced ? content : live + content.slice(live.length));
  }

  frame(frame: StreamFrame): void {
    if (frame.type === 'text') this.text(frame.turn, frame.step, frame.text, frame.restart === true);
    else if ('restart' in frame && frame.restart === true) this.live.set(`${frame.turn}.${frame.step}`, '');
    if (frame.type === 'usage') this.usage++;
    if (frame.type === 'event') this.seqs.push(frame.event.seq);
    if (frame.type === 'answer') {
      const { event } = frame;
      this.seqs.push(event.seq);
      const key = `${event.turn}.${event.step}`;
      const live = this.live.get(key) ?? '';
      this.live.delete(key);
      if (frame.replaced) this.replaced++;
      else if (!(event.content ?? '').startsWith(live))
        this.broken.push(`${key}: watch live ${JSON.stringify(live.slice(-40))}`);
      this.answers.set(key, frame.replaced ? (event.content ?? '') : live + frame.rest);
    }
  }
}

describe('a live stream across a worker kill, a continue-as-new and a dev-server restart', () => {
  let dir: string;
  let server: DevServer;
  let provider: ScriptedProvider;
  let store: SqliteSessionStore;
  let channel: DeltaChannel;
  let child: ChildWorker;
  let connection: Connection;
  let consoleServer: ConsoleServer;
  let startServer: () => Promise<DevServer>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-stream-resume-'));
    const cliPath = await resolveTemporalCli();
    const port = await freePort();
    startServer = () =>
      startDevServer({
        cliPath,
        port,
        dbFile: join(dir, 'temporal.db'),
        // Early, so the session continues-as-new at the boundary after its first turn.
        dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 15 },
      });
    server = await startServer();
    provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL],
        replies: [
          longReply('a', 'c1'),
          longReply('b', 'c2'),
          longReply('c', 'c3'),
          longReply('d', null),
          longReply('e', 'c5'),
          longReply('f', null),
        ],
        default: longReply('z', null),
      },
    });
    const storePath = join(dir, 'sessions.db');
    store = SqliteSessionStore.open(storePath);
    channel = openDeltaChannel(storePath);
    connection = await Connection.connect({ address: server.address });
    consoleServer = await startConsoleServer({
      uiDir: CONSOLE_UI_DIR,
      store,
      channel,
      // No status queries: the stream under test reads the store alone, and a query caught retrying across
      // the dev server's restart would outlive the test's connection.
      sessions: null,
      host: '127.0.0.1',
      port: 0,
      live: { pollMs: 50, statusEveryMs: 1_000, retryMs: 40 },
    });
  }, 120_000);

  afterAll(async () => {
    await consoleServer?.close();
    await child?.stop();
    await connection?.close();
    await channel?.close();
    await store?.close();
    await provider?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every event once and the logged answers exactly, to an SSE client and to watch()', async () => {
    const taskQueue = `stream-resume-${process.pid}`;
    const config: WorkerProcessConfig = {
      address: server.address,
      namespace: server.namespace,
      taskQueue,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath: join(dir, 'sessions.db'),
      providerBaseURL: provider.url,
      runLog: join(dir, 'runs.log'),
      idleTimeoutMs: 10_000,
      liveStream: true,
    };
    child = await startChildWorker(config);
    const client = new Client({ connection, namespace: server.namespace });
    const sessions = new SessionClient(client, { taskQueue });
    await sessions.followup(SESSION, 'turn one: stream at length', { start: true, messageId: 'm1' });
    const firstRunId = (await sessions.handle(SESSION).describe()).runId;
    const events = () => store.read(SESSION).catch((): SessionEvent[] => []);
    const started = Date.now();
    const until = async (what: string, predicate: () => Promise<boolean>, timeoutMs = 90_000) => {
      console.info(`stream-resume: +${Date.now() - started} ms waiting for ${what}`);
      const deadline = Date.now() + timeoutMs;
      const bounded = () =>
        Promise.race([
          predicate(),
          new Promise<boolean>((_, reject) => setTimeout(() => reject(new Error(`${what}: the check hung`)), 15_000)),
        ]);
      while (!(await bounded())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${child.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until('the log', async () => (await events()).length > 0);

    // Consumer 1: the eventsource package through the choppy proxy.
    const proxy = await choppyProxy(Number(new URL(consoleServer.url).port));
    const sse = new Assembly();
    let sseErrors = 0;
    const es = new EventSource(`http://127.0.0.1:${proxy.port}/api/sessions/${SESSION}/live`);
    es.addEventListener('error', () => sseErrors++);
    es.addEventListener('event', (m) => {
      const message = JSON.parse(m.data) as Extract<LiveMessage, { type: 'event' }>;
      sse.event(message.event, message.replaced === true);
    });
    es.addEventListener('text', (m) => {
      const message = JSON.parse(m.data) as Extract<LiveMessage, { type: 'text' }>;
      sse.text(message.turn, message.step, message.text, message.restart !== undefined);
    });
    es.addEventListener('usage', (m) => {
      const message = JSON.parse(m.data) as Extract<LiveMessage, { type: 'usage' }>;
      // A retried attempt's first output may be its usage: it voids the step's text all the same.
      if (message.restart !== undefined) sse.text(message.turn, message.step, '', true);
      sse.usage++;
    });

    // Consumer 2: SessionClient.watch, broken off after 1–6 frames and resumed from the last position.
    const watched = new Assembly();
    let watchResumes = 0;
    let stopWatching = false;
    const stopWatch = new AbortController();
    const watching = (async () => {
      let from: StreamPosition | undefined;
      while (!stopWatching) {
        const limit = 1 + Math.floor(Math.random() * 6);
        let n = 0;
        const frames = sessions.watch(
          SESSION,
          { store, channel },
          {
            ...(from ? { from } : {}),
            pollMs: 50,
            afterClose: true,
            signal: stopWatch.signal,
            onStall: (reason) => console.info(`stream-resume: watch stalled: ${reason}`),
          },
        );
        for await (const frame of frames) {
          watched.frame(frame);
          from = frame.position;
          if (++n >= limit || stopWatching) break;
        }
        watchResumes++;
      }
    })();

    try {
      // The worker dies while step 2 streams; a new one takes over (the step is retried after its heartbeat times out).
      await until('step 1.2 streaming', async () =>
        (await channel.read(SESSION, 0)).some((d) => d.turn === 1 && d.step === 2 && d.kind === 'text'),
      );
      child.kill('SIGKILL');
      expect((await child.exited).signal).toBe('SIGKILL');
      child = await startChildWorker(config);
      await until('turn 1 to end', async () => (await events()).some((e) => e.type === 'turn/end' && e.turn === 1));

      // At the turn boundary the workflow continues as new; the next turn runs in the new run.
      await until('the continue-as-new', async () => {
        const description = await sessions.handle(SESSION).describe();
        return description.runId !== firstRunId;
      });
      await sessions.followup(SESSION, 'turn two: stream at length again', { messageId: 'm2' });

      // The dev server restarts while turn 2 streams (same port, same database).
      await until('step 2.1 streaming', async () =>
        (await channel.read(SESSION, 0)).some((d) => d.turn === 2 && d.kind === 'text'),
      );
      await server.stop();
      server = await startServer();
      await until(
        'turn 2 to end',
        async () => (await events()).some((e) => e.type === 'turn/end' && e.turn === 2),
        180_000,
      );

      const log = await events();
      const head = log.length;
      await until(
        'both consumers to catch up',
        () => Promise.resolve(sse.seqs.length >= head && watched.seqs.length >= head),
        30_000,
      );
      stopWatching = true;
      stopWatch.abort();
      await watching;
      es.close();

      const logged = new Map(
        log.flatMap((e) => (e.type === 'assistant/message' ? [[`${e.turn}.${e.step}`, e.content ?? '']] : [])),
      );
      for (const [name, consumer] of [
        ['sse', sse],
        ['watch', watched],
      ] as const) {
        expect(consumer.seqs, name).toEqual(log.map((e) => e.seq));
        expect(consumer.broken, name).toEqual([]);
        expect(consumer.answers, name).toEqual(logged);
        // Most of the text came live, not from the logged answers: the stream, not the fallback, carried it.
        const total = [...logged.values()].reduce((n, text) => n + text.length, 0);
        expect(consumer.streamedChars, name).toBeGreaterThan(total / 2);
        expect(consumer.usage, name).toBeGreaterThan(0);
      }
      expect(proxy.connections()).toBeGreaterThanOrEqual(100);
      expect(sseErrors).toBeGreaterThanOrEqual(100);
      expect(watchResumes).toBeGreaterThanOrEqual(100);
      // It all happened: a retried model call (more calls than answers) and two turns.
      const calls = provider.requests().filter((r) => r.path.endsWith('/chat/completions')).length;
      expect(calls).toBeGreaterThan(logged.size);
      expect(log.filter((e) => e.type === 'turn/end').map((e) => e.turn)).toEqual([1, 2]);
      console.info(`stream-resume: log ${log.map((e) => e.type).join(' ')}`);
      console.info(
        `stream-resume: ${proxy.connections() - 1} SSE reconnects, ${watchResumes} watch resumes, ${log.length} events, ` +
          `${logged.size} answers, replaced sse=${sse.replaced} watch=${watched.replaced}`,
      );
    } finally {
      stopWatching = true;
      stopWatch.abort();
      es.close();
      await watching.catch(() => undefined);
      await proxy.close();
    }
  }, 600_000);
});
