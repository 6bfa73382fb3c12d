// The read-only plugin behind worker telemetry: for every provider call, a span (child of the running
// activity's span) and the provider metrics — duration, time to first delta, errors by code, tokens by
// kind and the cache-read share of the prompt.
import { context, SpanStatusCode, type Attributes, type Meter, type Tracer } from '@opentelemetry/api';
import type { ModelCallReport } from '../plugins/contracts.js';
import { cacheReadShare } from '../core/index.js';
import type { Plugin } from '../plugins/plugin.js';

export interface TelemetryPluginOptions {
  readonly tracer: Tracer;
  readonly meter: Meter;
}

/** Metric names, as exported (see docs/observability.md). */
export const TELEMETRY_METRICS = {
  duration: 'dh.provider.duration',
  firstDelta: 'dh.provider.first_delta',
  errors: 'dh.provider.errors',
  tokens: 'dh.provider.tokens',
  cacheReadShare: 'dh.provider.cache_read_share',
} as const;

export const PROVIDER_CALL_SPAN = 'dh.provider.call';

export function telemetryPlugin({ tracer, meter }: TelemetryPluginOptions): Plugin {
  const duration = meter.createHistogram(TELEMETRY_METRICS.duration, {
    unit: 's',
    description: 'Provider call duration, from sending the request to the end of the stream or the failure',
  });
  const firstDelta = meter.createHistogram(TELEMETRY_METRICS.firstDelta, {
    unit: 's',
    description: 'Time from sending the request to the first streamed delta',
  });
  const errors = meter.createCounter(TELEMETRY_METRICS.errors, {
    description: 'Failed provider calls, by error code',
  });
  const tokens = meter.createCounter(TELEMETRY_METRICS.tokens, {
    unit: '{token}',
    description: 'Tokens the provider reported, by kind: input_uncached, cache_read, output, reasoning',
  });
  const shares = meter.createHistogram(TELEMETRY_METRICS.cacheReadShare, {
    unit: '1',
    description: 'Share of the prompt read from the provider cache, per call that reported usage',
    advice: { explicitBucketBoundaries: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1] },
  });

  return {
    name: 'telemetry',
    onModelCall(report: ModelCallReport, step) {
      const common: Attributes = {
        'dh.provider': report.provider,
        'dh.model': report.model,
        'dh.purpose': report.purpose,
      };
      const outcome: Attributes = { ...common, 'dh.outcome': report.outcome };
      if (report.errorCode !== null) outcome['dh.error_code'] = report.errorCode;
      duration.record(report.durationMs / 1000, outcome);
      if (report.firstDeltaMs !== null) firstDelta.record(report.firstDeltaMs / 1000, common);
      if (report.errorCode !== null) errors.add(1, { ...common, 'dh.error_code': report.errorCode });

      const usage = report.usage;
      const share = usage ? cacheReadShare(usage) : null;
      if (usage) {
        const kinds = {
          input_uncached: usage.inputUncached,
          cache_read: usage.cacheRead,
          output: usage.output,
          reasoning: usage.reasoning,
        };
        for (const [kind, count] of Object.entries(kinds)) {
          if (count > 0) tokens.add(count, { ...common, 'dh.token_kind': kind });
        }
        if (share !== null) shares.record(share, common);
      }

      // Recorded after the fact with the call's own start and end, as a child of the activity's span.
      const span = tracer.startSpan(
        PROVIDER_CALL_SPAN,
        {
          startTime: report.startedAt,
          attributes: {
            ...outcome,
            'dh.session_id': step.sessionId,
            'dh.turn': step.turn,
            'dh.step': step.step,
            'dh.attempt': report.attempt,
            ...(report.firstDeltaMs !== null ? { 'dh.first_delta_ms': report.firstDeltaMs } : {}),
            ...(usage
              ? {
                  'dh.usage.input_uncached': usage.inputUncached,
                  'dh.usage.cache_read': usage.cacheRead,
                  'dh.usage.output': usage.output,
                  'dh.usage.reasoning': usage.reasoning,
                }
              : {}),
            ...(share !== null ? { 'dh.cache_read_share': share } : {}),
          },
        },
        context.active(),
      );
      if (report.errorCode !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: report.errorCode });
      span.end(report.startedAt + report.durationMs);
    },
  };
}
