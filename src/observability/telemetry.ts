// Optional OpenTelemetry for a worker process: traces through Temporal's interceptors (workflow run,
// signals, updates, activity start and execution) plus a span per provider call, and provider metrics
// (latency, time to first delta, errors, tokens, cache-read share), exported over OTLP/HTTP (JSON).
// Off unless an OTLP endpoint is configured in the environment.
import { context, propagation, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import { DhError } from '../core/index.js';
import type { Plugin } from '../plugins/plugin.js';
import { telemetryPlugin } from './telemetry-plugin.js';

export interface TelemetryOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** `service.name` when OTEL_SERVICE_NAME is unset. */
  readonly serviceName?: string;
}

/** What a worker adds when telemetry is on. */
export interface Telemetry {
  readonly tracer: Tracer;
  /** Metrics and a span for every provider call (add it to the worker's plugins). */
  readonly plugin: Plugin;
  /** Activity interceptors: a span per activity execution, joined to the workflow's trace by its headers. */
  readonly activityInterceptors: ActivityInterceptorsFactory[];
  /** The sink the workflow-side interceptors export their spans through. */
  readonly workflowSinks: InjectedSinks<OpenTelemetrySinks>;
  /** Exports everything recorded so far. */
  flush(): Promise<void>;
  /** Flushes and stops the exporters. */
  shutdown(): Promise<void>;
}

export const TELEMETRY_SERVICE_NAME = 'durable-harness-worker';
const DEFAULT_METRIC_INTERVAL_MS = 60_000;

/**
 * Starts telemetry when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
 * OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) is set and OTEL_SDK_DISABLED is not true; returns undefined
 * otherwise. Headers come from OTEL_EXPORTER_OTLP_HEADERS as the exporters read it; the metric export
 * interval from OTEL_METRIC_EXPORT_INTERVAL (ms, default 60 s).
 */
export function startTelemetry(options: TelemetryOptions = {}): Telemetry | undefined {
  const env = options.env ?? process.env;
  if (/^true$/i.test(env.OTEL_SDK_DISABLED?.trim() ?? '')) return undefined;
  const base = endpoint(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')?.replace(/\/+$/, '');
  const tracesUrl = endpoint(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? (base && `${base}/v1/traces`);
  const metricsUrl = endpoint(env, 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') ?? (base && `${base}/v1/metrics`);
  if (tracesUrl === undefined && metricsUrl === undefined) return undefined;
  for (const name of [
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL',
  ]) {
    const protocol = env[name]?.trim();
    if (protocol && protocol !== 'http/json') {
      throw new DhError(
        'INVALID_CONFIG',
        `invalid configuration: ${name}=${protocol}: the worker exports OTLP over HTTP as JSON; set it to http/json or unset it`,
      );
    }
  }
  const interval = env.OTEL_METRIC_EXPORT_INTERVAL?.trim();
  const intervalMs = interval ? Number(interval) : DEFAULT_METRIC_INTERVAL_MS;
  if (!Number.isInteger(intervalMs) || intervalMs < 100) {
    throw new DhError(
      'INVALID_CONFIG',
      `invalid configuration: OTEL_METRIC_EXPORT_INTERVAL: milliseconds, an integer of at least 100 (got "${interval}")`,
    );
  }

  const resource = Resource.default().merge(
    new Resource({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || options.serviceName || TELEMETRY_SERVICE_NAME }),
  );
  // Activity spans must see the span of the activity that is running: that needs an async context
  // manager, and workflow → activity headers need the W3C propagator. Both are process-wide in the API.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  const tracerProvider = new BasicTracerProvider({ resource });
  const spanProcessor = new BatchSpanProcessor(
    tracesUrl !== undefined ? new OTLPTraceExporter({ url: tracesUrl }) : new NullSpanExporter(),
  );
  tracerProvider.addSpanProcessor(spanProcessor);
  const tracer = tracerProvider.getTracer('durable-harness');

  const meterProvider = new MeterProvider({
    resource,
    readers:
      metricsUrl !== undefined
        ? [
            new PeriodicExportingMetricReader({
              exporter: new OTLPMetricExporter({ url: metricsUrl }),
              exportIntervalMillis: intervalMs,
              exportTimeoutMillis: Math.min(intervalMs, 30_000),
            }),
          ]
        : [],
  });

  const interceptorOptions = { tracer };
  return {
    tracer,
    plugin: telemetryPlugin({ tracer, meter: meterProvider.getMeter('durable-harness') }),
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx, interceptorOptions),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    workflowSinks: { exporter: makeWorkflowExporter(spanProcessor, resource) },
    flush: async () => {
      await tracerProvider.forceFlush();
      await meterProvider.forceFlush();
    },
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

function endpoint(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  if (!/^https?:\/\//.test(value)) {
    throw new DhError('INVALID_CONFIG', `invalid configuration: ${name}: an http:// or https:// URL (got "${value}")`);
  }
  return value;
}

/** Traces off but metrics on: workflow spans still arrive at the sink and are dropped here. */
class NullSpanExporter {
  export(_spans: unknown[], done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
