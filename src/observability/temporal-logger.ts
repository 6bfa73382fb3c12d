// The Temporal SDK's own log lines (worker state, activity and workflow failures) through the project's
// logger: one JSON line each, with the session id, and a failure's message and code — Temporal logs
// "Activity failed" once per failed attempt, with its attempt, and that line is where the cause shows.
import type { LogEntry, LogLevel } from '@temporalio/worker';
import type { LogFields, Logger } from './logger.js';

/** The fields of one Temporal log entry: its primitive metadata, the failure's message and code, the session. */
export function temporalLogFields(entry: LogEntry): LogFields {
  const fields: Record<string, string | number | boolean | null> = { source: 'temporal' };
  for (const [key, value] of Object.entries(entry.meta ?? {})) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
    else if (key === 'error' && value instanceof Error) Object.assign(fields, failureFields(value));
  }
  const workflowId = fields.workflowId;
  if (typeof workflowId === 'string' && workflowId.startsWith('session-')) fields.sessionId = workflowId.slice(8);
  return fields;
}

/**
 * A failure as `error` (its message: the activity edge builds it from facts, an API key redacted) and
 * `errorCode` (an ApplicationFailure's type: the stable code). Never the stack or the details.
 */
function failureFields(error: Error): Record<string, string | boolean> {
  const fields: Record<string, string | boolean> = { error: error.message };
  const { type, nonRetryable } = error as { type?: unknown; nonRetryable?: unknown };
  if (typeof type === 'string' && type !== '') fields.errorCode = type;
  if (nonRetryable === true) fields.nonRetryable = true;
  return fields;
}

/**
 * What the SDK says at WARN about a worker polling no workflow tasks: dh's model, host and tool queues are
 * activity-only by design, so each start said it three times about nothing wrong. Logged at debug instead.
 */
const ACTIVITY_ONLY_NOTICE = 'No workflows registered, not polling for workflow tasks';

/** Installs the Temporal runtime's logger (once per process, before the first worker or connection). */
export async function installTemporalLogger(logger: Logger): Promise<void> {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const level: LogLevel =
    logger.level === 'silent' ? 'ERROR' : logger.level === 'debug' ? 'DEBUG' : (logger.level.toUpperCase() as LogLevel);
  const log = (entry: LogEntry): void => {
    const at =
      entry.level === 'TRACE' || entry.message === ACTIVITY_ONLY_NOTICE
        ? 'debug'
        : (entry.level.toLowerCase() as 'debug' | 'info' | 'warn' | 'error');
    logger[at](entry.message, temporalLogFields(entry));
  };
  Runtime.install({ logger: new DefaultLogger(level, log) });
}

/**
 * The same, unless the process's Temporal runtime exists already (the embedder installed its own logger, or a
 * worker or connection was made first): then that one stays, and this answers false.
 */
export async function installTemporalLoggerIfUnset(logger: Logger): Promise<boolean> {
  const { IllegalStateError } = await import('@temporalio/common');
  try {
    await installTemporalLogger(logger);
    return true;
  } catch (error) {
    if (error instanceof IllegalStateError) return false;
    throw error;
  }
}
