// Temporal's workflow-side tracing interceptors ship in every session-workflow bundle, so a bundle never
// depends on the environment it was built in; with telemetry off their spans go to a sink that drops them.
import { createRequire } from 'node:module';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks } from '@temporalio/worker';
import type { Telemetry } from './telemetry.js';

/** Interceptor modules for `bundleWorkflowCode({ workflowInterceptorModules })` / `interceptors.workflowModules`. */
export const WORKFLOW_INTERCEPTOR_MODULES: readonly string[] = [
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** Without this sink every workflow activation would log "unregistered external sink". */
const DROP_WORKFLOW_SPANS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined } },
};

/** The sinks a session worker (or a replay worker) registers. */
export function workflowTracingSinks(telemetry?: Telemetry): InjectedSinks<OpenTelemetrySinks> {
  return telemetry?.workflowSinks ?? DROP_WORKFLOW_SPANS;
}
