// One provider call from inside an activity: heartbeats while it runs (they carry interrupts), and a
// report of what it did (latency, outcome, error code, usage) to the runtime's observers afterwards.
import { Context } from '@temporalio/activity';
import type { BuiltRequest } from '../core/index.js';
import { callModel, type CallModelResult, type ModelDelta } from '../providers/call-model.js';
import type { ModelCallPurpose, ModelCallReport, StepContext } from '../plugins/contracts.js';
import type { WireBody } from '../providers/wire-body.js';
import type { SessionRuntime } from './session-runtime.js';

export interface ObservedCall {
  readonly request: BuiltRequest;
  /** The wire body derived from `request` once the outbound gate verified it (see callModel's `derived`). */
  readonly verified: WireBody;
  readonly purpose: ModelCallPurpose;
  readonly context: StepContext;
  readonly onDelta: (delta: ModelDelta) => void;
}

export async function callModelObserved(runtime: SessionRuntime, call: ObservedCall): Promise<CallModelResult> {
  const activity = Context.current();
  const heartbeat = setInterval(() => activity.heartbeat(), runtime.heartbeatMs);
  const startedAt = Date.now();
  const started = performance.now();
  let firstDeltaMs: number | null = null;
  const report = (fields: Pick<ModelCallReport, 'outcome' | 'errorCode' | 'usage'>): void => {
    // Observers never decide anything; one that throws must not turn a good answer into a failed step.
    try {
      runtime.onModelCall?.(
        {
          purpose: call.purpose,
          provider: call.request.config.provider,
          model: call.request.config.model,
          attempt: activity.info.attempt,
          startedAt,
          durationMs: performance.now() - started,
          firstDeltaMs,
          ...fields,
        },
        call.context,
      );
    } catch {
      // contained: see above
    }
  };
  try {
    const result = await callModel({
      request: call.request,
      profile: runtime.profile,
      apiKey: runtime.apiKey,
      signal: activity.cancellationSignal,
      idleTimeoutMs: runtime.idleTimeoutMs,
      derived: call.verified,
      onDelta: (delta) => {
        firstDeltaMs ??= performance.now() - started;
        call.onDelta(delta);
      },
    });
    report({
      outcome: result.message.interrupted ? 'interrupted' : 'ok',
      errorCode: null,
      usage: result.usage ?? null,
    });
    return result;
  } catch (error) {
    const code =
      typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : 'INTERNAL';
    report({ outcome: 'error', errorCode: code, usage: null });
    throw error;
  } finally {
    clearInterval(heartbeat);
  }
}
