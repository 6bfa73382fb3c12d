// OpenTelemetry through the real stack: a session on the test Temporal server, with the worker exporting
// over OTLP/HTTP to a real receiver. Workflow, activity and provider-call spans form one trace per run;
// provider metrics (duration, errors by code, tokens by kind, cache-read share) match the session log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { startTelemetry, type Telemetry } from '../../src/observability/telemetry.js';
import { PROVIDER_CALL_SPAN, TELEMETRY_METRICS } from '../../src/observability/telemetry-plugin.js';
import { closeSignal, followupSignal } from '../../src/shared/session-messages.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedPoint } from '../helpers/otlp-receiver.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { echoTool } from '../helpers/test-tools.js';

const LONG = 'lorem ipsum dolor sit amet '.repeat(300);
const total = (points: readonly ReceivedPoint[], where: Record<string, string> = {}): number =>
  points
    .filter((p) => Object.entries(where).every(([k, v]) => p.attributes[k] === v))
    .reduce((sum, p) => sum + p.value, 0);

describe('OpenTelemetry (OTLP/HTTP to a real receiver)', () => {
  let receiver: OtlpReceiver;
  let telemetry: Telemetry;
  let h: Harness;
  let events: readonly SessionEvent[];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const started = startTelemetry({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'dh-telemetry-test' },
    });
    if (!started) throw new Error('telemetry did not start with an endpoint configured');
    telemetry = started;
    h = await startHarness({
      telemetry,
      // Not quick here, so its call runs in a tool step activity of its own and that activity's span shows.
      tools: [{ ...echoTool, quick: false }],
      script: {
        cache: 'deepseek',
        replies: [
          { fault: { kind: 'rate-limit', retryAfterSeconds: 0.2 } },
          { toolCalls: [{ id: 'c1', name: 'echo', arguments: '{"text":"hi"}' }] },
          { text: 'echoed' },
          { text: 'second turn' },
        ],
      },
    });
    const handle = await h.start('traced');
    await handle.signal(followupSignal, { content: `echo this, please: ${LONG}` });
    await waitForTurnEnd(h.store, 'traced', 1, 60_000);
    await handle.signal(followupSignal, { content: 'and once more' });
    events = await waitForTurnEnd(h.store, 'traced', 2, 60_000);
    // The workflow's own span ends with the run: close the session so it is exported too.
    await handle.signal(closeSignal);
    await handle.result();
    // Workflow spans reach the exporter through a sink, after the activation that ended them completes.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await telemetry.flush();
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await telemetry?.shutdown();
    await receiver?.close();
  });

  const answers = () => events.filter((e) => e.type === 'assistant/message');

  it('exports OTLP as JSON over HTTP under the configured service name', () => {
    expect(receiver.requests.map((r) => r.path)).toEqual(expect.arrayContaining(['/v1/traces', '/v1/metrics']));
    expect(new Set(receiver.requests.map((r) => r.contentType))).toEqual(new Set(['application/json']));
    expect(new Set(receiver.spans.map((s) => s.serviceName))).toEqual(new Set(['dh-telemetry-test']));
  });

  it('records one provider-call span per request the provider received, inside the model activity of the workflow trace', () => {
    const calls = receiver.spans.filter((s) => s.name === PROVIDER_CALL_SPAN);
    const chatRequests = h.provider.requests().filter((r) => r.path.endsWith('/chat/completions'));
    expect(calls).toHaveLength(chatRequests.length);
    expect(calls).toHaveLength(4); // the rate-limited attempt, its retry, the step after the tool, turn 2
    const byId = new Map(receiver.spans.map((s) => [s.spanId, s]));
    const runs = receiver.spans.filter((s) => s.name === 'RunWorkflow:agentSession');
    expect(
      runs,
      `one run, ended by close; spans: ${[...new Set(receiver.spans.map((s) => s.name))].join(', ')}`,
    ).toHaveLength(1);
    for (const call of calls) {
      const activity = byId.get(call.parentSpanId ?? '');
      expect(activity?.name, 'the provider call is a child of the model activity').toBe('RunActivity:modelStep');
      const scheduled = byId.get(activity?.parentSpanId ?? '');
      expect(scheduled?.name, 'the activity span hangs off the workflow scheduling it').toBe('StartActivity:modelStep');
      expect(scheduled?.parentSpanId).toBe(runs[0]?.spanId);
      expect(call.traceId).toBe(runs[0]?.traceId);
      expect(call.attributes['dh.session_id']).toBe('traced');
    }
    const failed = calls.filter((c) => c.statusCode === 2);
    expect(failed.map((c) => c.attributes['dh.error_code'])).toEqual(['RATE_LIMITED']);
    expect(failed[0]?.attributes['dh.attempt']).toBe(1);
    const retried = calls.find((c) => c.attributes['dh.turn'] === 1 && c.attributes['dh.attempt'] === 2);
    expect(retried?.attributes['dh.outcome']).toBe('ok');
    expect(receiver.spans.some((s) => s.name === 'RunActivity:toolStep')).toBe(true);
  });

  it('exports provider metrics that agree with the usage in the session log', () => {
    const logged = { input_uncached: 0, cache_read: 0, output: 0, reasoning: 0 };
    for (const answer of answers()) {
      if (answer.type !== 'assistant/message' || !answer.usage) continue;
      logged.input_uncached += answer.usage.inputUncached;
      logged.cache_read += answer.usage.cacheRead;
      logged.output += answer.usage.output;
      logged.reasoning += answer.usage.reasoning;
    }
    expect(logged.cache_read, 'the long first message makes later steps hit the simulated cache').toBeGreaterThan(0);
    const tokens = receiver.latestPoints(TELEMETRY_METRICS.tokens);
    for (const [kind, count] of Object.entries(logged)) {
      expect(total(tokens, { 'dh.token_kind': kind }), kind).toBe(count);
    }

    const durations = receiver.latestPoints(TELEMETRY_METRICS.duration);
    expect(durations.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(4);
    expect(durations.find((p) => p.attributes['dh.outcome'] === 'error')?.attributes['dh.error_code']).toBe(
      'RATE_LIMITED',
    );
    expect(total(receiver.latestPoints(TELEMETRY_METRICS.errors), { 'dh.error_code': 'RATE_LIMITED' })).toBe(1);

    const shares = receiver.latestPoints(TELEMETRY_METRICS.cacheReadShare);
    expect(shares.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(answers().length);
    const expectedShare = answers().reduce((sum, a) => {
      if (a.type !== 'assistant/message' || !a.usage) return sum;
      return sum + a.usage.cacheRead / (a.usage.cacheRead + a.usage.inputUncached);
    }, 0);
    expect(total(shares)).toBeCloseTo(expectedShare, 6);
    expect(receiver.latestPoints(TELEMETRY_METRICS.firstDelta).reduce((n, p) => n + (p.count ?? 0), 0)).toBe(3);
  });
});

describe('telemetry configuration', () => {
  it('is off without an OTLP endpoint, or when OTEL_SDK_DISABLED=true', () => {
    expect(startTelemetry({ env: {} })).toBeUndefined();
    expect(
      startTelemetry({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' } }),
    ).toBeUndefined();
  });

  it('refuses what it cannot honour with one line naming the variable', () => {
    const bad = (env: NodeJS.ProcessEnv) => () => startTelemetry({ env });
    expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: '127.0.0.1:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: an http/);
    expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL=grpc: .* http\/json/,
    );
    expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_METRIC_EXPORT_INTERVAL: 'soon' })).toThrow(
      /OTEL_METRIC_EXPORT_INTERVAL/,
    );
  });
});
