// One model step of the console's timeline as the log builds it: its state, its waterfall of phases (wait,
// model, approval, tool) and its cost, folded event by event. Pure: the same events give the same step.
import type { SessionEvent, StepCost, Usage } from '../core/index.js';
import type { StepPhase, StepState, TimelineStep } from './console-api.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Call = { callId: string; name: string; status: string | null };

export class StepTracker {
  readonly turn: number;
  readonly step: number;
  readonly #startedAt: number;
  #model: string | null;
  #fromSeq: number;
  #toSeq: number;
  #endedAt: number | null = null;
  #requestDigest: string | null = null;
  #sentAt: number | null = null;
  #answer: { at: number; usage: Usage | null; cost: StepCost | null; interrupted: boolean } | null = null;
  #finishReason: string | null = null;
  #error: { code: string; message: string } | null = null;
  readonly #calls: Call[] = [];
  /** Phases by key (`tool:<id>`, `approval:<id>`), in the order they began. */
  readonly #phases = new Map<string, Mutable<StepPhase>>();
  headerChanged: boolean;

  constructor(start: Extract<SessionEvent, { type: 'step/start' }>, model: string | null, headerChanged: boolean) {
    this.turn = start.turn;
    this.step = start.step;
    this.#startedAt = start.at;
    this.#fromSeq = start.seq;
    this.#toSeq = start.seq;
    this.#model = model;
    this.headerChanged = headerChanged;
  }

  get ended(): boolean {
    return this.#endedAt !== null;
  }
  get model(): string | null {
    return this.#model;
  }
  /** A step's own header is logged after its `step/start`: the model it names is this step's. */
  set model(model: string | null) {
    this.#model = model;
  }
  get usage(): Usage | null {
    return this.#answer?.usage ?? null;
  }
  get cost(): StepCost | null {
    return this.#answer?.cost ?? null;
  }

  /** Folds an event logged while this step is the open one. */
  apply(event: SessionEvent): void {
    this.#toSeq = event.seq;
    const offset = event.at - this.#startedAt;
    switch (event.type) {
      case 'request/sent':
        this.#requestDigest = event.digest;
        this.#sentAt = event.at;
        break;
      case 'assistant/message':
        this.#answer = {
          at: event.at,
          usage: event.usage ?? null,
          cost: event.cost ?? null,
          interrupted: event.interrupted === true,
        };
        this.#finishReason = event.finishReason;
        this.#calls.push(...event.toolCalls.map((c) => ({ callId: c.id, name: c.name, status: null })));
        break;
      case 'approval/request':
        this.#phases.set(`approval:${event.callId}`, {
          kind: 'approval',
          label: `${event.name} (${event.callId})`,
          startMs: offset,
          endMs: null,
        });
        break;
      case 'approval/decision':
        this.#end(`approval:${event.callId}`, offset);
        break;
      case 'tool/start': {
        const name = this.#calls.find((c) => c.callId === event.callId)?.name ?? 'tool';
        this.#phases.set(`tool:${event.callId}`, {
          kind: 'tool',
          label: `${name} (${event.callId})`,
          startMs: offset,
          endMs: null,
        });
        break;
      }
      case 'tool/result': {
        const call = this.#calls.find((c) => c.callId === event.callId);
        if (call) call.status = event.status;
        this.#end(`tool:${event.callId}`, offset);
        break;
      }
      case 'step/end':
        this.#endedAt = event.at;
        this.#error = event.error ?? null;
        break;
      default:
        break;
    }
  }

  #end(key: string, offset: number): void {
    const phase = this.#phases.get(key);
    if (phase && phase.endMs === null) phase.endMs = offset;
  }

  /** How it stands: only its own `step/end` ends it, and then by what the log says happened. */
  state(): StepState {
    if (this.#endedAt === null) return 'running';
    if (this.#error !== null) return 'failed';
    const cut = this.#calls.some((c) => c.status === null || c.status === 'interrupted');
    return this.#answer === null || this.#answer.interrupted || cut ? 'interrupted' : 'completed';
  }

  view(): TimelineStep {
    const ms = (at: number | null) => (at === null ? null : at - this.#startedAt);
    const sentMs = ms(this.#sentAt);
    const answerMs = ms(this.#answer?.at ?? null);
    const endMs = ms(this.#endedAt);
    // The wait lasts until the request went out; the model from then until its answer (or the step's end).
    const phases: StepPhase[] = [
      { kind: 'wait', label: 'request', startMs: 0, endMs: sentMs ?? endMs },
      ...(sentMs !== null
        ? [{ kind: 'model' as const, label: this.#model ?? 'model', startMs: sentMs, endMs: answerMs ?? endMs }]
        : []),
      ...[...this.#phases.values()].map((p) => ({ ...p, endMs: p.endMs ?? endMs })),
    ];
    return {
      turn: this.turn,
      step: this.step,
      state: this.state(),
      error: this.#error,
      model: this.#model,
      startedAt: this.#startedAt,
      endedAt: this.#endedAt,
      cost: this.cost,
      phases,
      fromSeq: this.#fromSeq,
      toSeq: this.#toSeq,
      requestDigest: this.#requestDigest,
      usage: this.usage,
      latencyMs: answerMs,
      finishReason: this.#finishReason,
      toolCalls: this.#calls.map((c) => ({ ...c })),
      headerChanged: this.headerChanged,
    };
  }
}
