// Temporal's workflow-side tracing interceptors: in the workflow bundle only when telemetry is on (they cost
// memory per cached workflow), and the sink their spans leave through (a dropping one when telemetry is off).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks } from '@temporalio/worker';
import type { Telemetry } from './telemetry.js';

/** Interceptor modules for `bundleWorkflowCode({ workflowInterceptorModules })` / `interceptors.workflowModules`. */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** True when a prebuilt bundle carries the interceptors (bundleSessionWorkflows with `tracing`). */
export async function bundleHasTracing(codePath: string): Promise<boolean> {
  return (await readFile(codePath, 'utf8')).includes('OpenTelemetryInboundInterceptor');
}

/** A bundle with the interceptors but telemetry off would log "unregistered external sink" at every activation. */
const DROP_WORKFLOW_SPANS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined } },
};

/** The sinks a session worker (or a replay worker) registers. */
export function workflowTracingSinks(telemetry?: Telemetry): InjectedSinks<OpenTelemetrySinks> {
  return telemetry?.workflowSinks ?? DROP_WORKFLOW_SPANS;
}
