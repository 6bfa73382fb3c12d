// Builds valid session logs from high-level commands, for property tests and benchmarks. Every
// draft goes through Session.append, so a generated log is valid by construction or the test fails.
import fc from 'fast-check';
import {
  buildSessionRequest,
  canonicalJson,
  digestOf,
  findPairingProblem,
  Session,
  SESSION_FORMAT_VERSION,
  type AgentOverrides,
  type AgentRef,
  type BuiltRequest,
  type EventDraft,
  type Message,
  type RequestHeader,
} from '../../src/core/index.js';

export type LogCommand =
  | { kind: 'send'; origin: 'followup' | 'steer' | 'inject'; text: string }
  | { kind: 'step'; toolCalls: number; text: string; changeHeader: boolean; skipLastTool: boolean }
  | { kind: 'end-turn' }
  | { kind: 'replace'; from: number; length: number }
  | { kind: 'prune'; pick: number }
  /** A session's new overrides of its agent (a driver made with an agent only). */
  | { kind: 'overrides'; overrides: AgentOverrides };

export interface StepRecord {
  readonly request: BuiltRequest;
  /** The log's length when the request was built (it derives from events [0, head)). */
  readonly head: number;
  /** Increments on every header change. */
  readonly epoch: number;
  readonly replaceGeneration: number;
}

export const logCommandArbitrary: fc.Arbitrary<LogCommand> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('send' as const),
      origin: fc.constantFrom('followup' as const, 'steer' as const, 'inject' as const),
      text: fc.string({ maxLength: 40 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('step' as const),
      toolCalls: fc.nat({ max: 3 }),
      text: fc.string({ maxLength: 40 }),
      changeHeader: fc.nat({ max: 9 }).map((n) => n < 2),
      skipLastTool: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'end-turn' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('replace' as const), from: fc.nat(), length: fc.nat({ max: 6 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('prune' as const), pick: fc.nat() }) },
);

/** Drives a Session with commands and keeps the request built at every step. */
export class LogDriver {
  readonly session: Session;
  readonly steps: StepRecord[] = [];
  #at = 1_700_000_000_000;
  #messageCounter = 0;
  #epoch = 0;
  #headerVersion = 0;

  /** The agent the log names (format 2): in its start and in every header, with the overrides in force. */
  readonly #agent: AgentRef | undefined;
  #overridesId: string | undefined;

  constructor(sessionId = 'sess-gen', options: { readonly agent?: AgentRef } = {}) {
    this.session = new Session(sessionId);
    this.#agent = options.agent;
    this.append({
      type: 'session/start',
      at: this.#at,
      sessionId,
      formatVersion: SESSION_FORMAT_VERSION,
      ...(options.agent ? { agent: options.agent } : {}),
    });
  }

  append(...drafts: EventDraft[]): void {
    this.session.append(...drafts);
  }

  run(commands: readonly LogCommand[]): this {
    for (const command of commands) this.apply(command);
    return this;
  }

  apply(command: LogCommand): void {
    const at = ++this.#at;
    const state = this.session.state;
    switch (command.kind) {
      case 'send': {
        const messageId = `m${++this.#messageCounter}`;
        const target = command.origin === 'followup' ? 'next-turn' : 'next-step';
        this.append({
          type: 'inbox/enqueue',
          at,
          messageId,
          target,
          wakeup: command.origin !== 'inject',
          origin: command.origin,
          ...(command.origin === 'inject' ? { source: 'test' } : {}),
          content: command.text,
        });
        return;
      }
      case 'overrides':
        this.#overridesId = `o${at}`;
        this.append({ type: 'agent/overrides', at, overridesId: this.#overridesId, overrides: command.overrides });
        return;
      case 'end-turn':
        if (state.openTurn !== null) this.append({ type: 'turn/end', at, turn: state.openTurn, reason: 'completed' });
        return;
      case 'step':
        this.#step(command, at);
        return;
      case 'replace':
        this.#replace(command, at);
        return;
      case 'prune':
        this.#prune(command, at);
        return;
    }
  }

  #step(command: Extract<LogCommand, { kind: 'step' }>, at: number): void {
    const state = this.session.state;
    if (state.openTurn === null) this.append({ type: 'turn/start', at, turn: state.lastTurn + 1 });
    const turn = state.openTurn ?? 0;
    const step = state.lastStep + 1;
    const queued = [...state.queue.values()].sort((a, b) => a.enqueuedAt - b.enqueuedAt);
    const nextTurn = step === 1 ? queued.find((m) => m.target === 'next-turn') : undefined;
    const claimed = [...(nextTurn ? [nextTurn] : []), ...queued.filter((m) => m.target === 'next-step')];
    if (claimed.length > 0)
      this.append({ type: 'inbox/claim', at, turn, step, messageIds: claimed.map((m) => m.messageId) });
    this.append({ type: 'step/start', at, turn, step });
    for (const m of claimed) {
      this.append({
        type: 'user/message',
        at,
        turn,
        step,
        messageId: m.messageId,
        origin: m.origin,
        ...(m.source !== undefined ? { source: m.source } : {}),
        content: m.content,
      });
    }
    const current = this.session.requestHeader();
    if (!current || command.changeHeader) {
      this.#headerVersion++;
      this.#epoch++;
      this.append({
        type: 'request/header',
        at,
        turn,
        step,
        reason: current ? 'change' : 'initial',
        header: {
          ...header(this.#headerVersion),
          ...(this.#agent
            ? {
                agent: { ...this.#agent, ...(this.#overridesId !== undefined ? { overrides: this.#overridesId } : {}) },
              }
            : {}),
        },
      });
    }
    this.steps.push({
      request: buildSessionRequest(this.session),
      head: this.session.head,
      epoch: this.#epoch,
      replaceGeneration: this.session.replaceGeneration,
    });
    const toolCalls = Array.from({ length: command.toolCalls }, (_, i) => ({
      id: `call_${turn}_${step}_${i}`,
      name: 'read_file',
      arguments: JSON.stringify({ path: `f${i}.txt` }),
    }));
    // Stand-ins for the wire digest and size: the generator has no wire body, and hashing and sizing the whole
    // request at every step made a long log quadratic to build (a 100k-event log took tens of minutes).
    const sent = { turn, step, head: this.session.head, messages: this.session.deriveMessages().length };
    this.append({ type: 'request/sent', at, turn, step, digest: digestOf(sent), bytes: 100 * sent.messages });
    this.append({
      type: 'assistant/message',
      at,
      turn,
      step,
      content: command.text,
      toolCalls,
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      usage: { inputUncached: 10, cacheRead: 0, output: 5, reasoning: 0 },
    });
    toolCalls.forEach((call, i) => {
      const skipped = command.skipLastTool && i === toolCalls.length - 1;
      if (!skipped) this.append({ type: 'tool/start', at, turn, step, callId: call.id, name: call.name });
      this.append({
        type: 'tool/result',
        at,
        turn,
        step,
        callId: call.id,
        name: call.name,
        status: skipped ? 'skipped' : 'ok',
        output: skipped ? 'skipped' : `contents of ${call.arguments}`,
      });
    });
    this.append({ type: 'step/end', at, turn, step });
  }

  #replace(command: Extract<LogCommand, { kind: 'replace' }>, at: number): void {
    const surface = this.session.deriveMessages();
    const cuts = safeCutPoints(surface);
    if (cuts.length < 2 || this.session.state.openStep) return;
    const startIndex = command.from % (cuts.length - 1);
    const endIndex = Math.min(cuts.length - 1, startIndex + 1 + (command.length % (cuts.length - startIndex)));
    const start = cuts[startIndex] ?? 0;
    const end = (cuts[endIndex] ?? 0) - 1;
    if (end < start) return;
    this.append({
      type: 'surface/replace',
      at,
      replaceId: `r${at}`,
      range: { start, end },
      messages: [{ role: 'user', content: `summary of messages ${start}..${end}` }],
    });
  }

  #prune(command: Extract<LogCommand, { kind: 'prune' }>, at: number): void {
    const surface = this.session.deriveMessages();
    const tools = surface.flatMap((m, i) => (m.role === 'tool' ? [{ m, i }] : []));
    const picked = tools[command.pick % Math.max(1, tools.length)];
    if (!picked || picked.m.role !== 'tool' || this.session.state.openStep) return;
    this.append({
      type: 'surface/replace',
      at,
      replaceId: `p${at}`,
      range: { start: picked.i, end: picked.i },
      messages: [{ role: 'tool', toolCallId: picked.m.toolCallId, content: '[output pruned]' }],
    });
  }
}

/** Positions where the surface can be cut without separating a tool call from its results. */
export function safeCutPoints(surface: readonly Message[]): number[] {
  const cuts: number[] = [];
  for (let i = 0; i <= surface.length; i++) {
    if (findPairingProblem(surface.slice(0, i), false) === null) cuts.push(i);
  }
  return cuts;
}

export function header(version: number): RequestHeader {
  return {
    config: {
      provider: 'deepseek',
      model: version % 2 ? 'deepseek-chat' : 'deepseek-reasoner',
      temperature: 0,
      includeUsage: true,
    },
    system: `You are a careful agent (v${version}).`,
    tools: [
      {
        name: 'read_file',
        description: 'Read a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } } },
      },
    ],
    prefix: [{ role: 'user', content: 'Workspace: /tmp/demo' }],
  };
}

/** Per-message canonical serializations of a request (what prefix stability is measured on). */
export function messageSerializations(request: BuiltRequest): string[] {
  return request.messages.map((m) => canonicalJson(m));
}
