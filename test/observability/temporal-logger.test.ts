// The Temporal SDK's log entries as the worker logs them: a failure keeps its message and code (the cause
// of each failed activity attempt), never its stack or details; the session id comes from the workflow id.
import { ApplicationFailure } from '@temporalio/common';
import type { LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { temporalLogFields } from '../../src/observability/temporal-logger.js';

function entry(meta: Record<string, unknown>): LogEntry {
  return { level: 'WARN', message: 'Activity failed', meta, timestampNanos: 0n };
}

describe('temporalLogFields', () => {
  it("logs an activity failure's message, code and attempt, not its stack or details", () => {
    const error = ApplicationFailure.create({
      message: 'connection failed: connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)',
      type: 'STREAM_CUT',
      details: [{ code: 'STREAM_CUT', retryable: true }],
    });
    const fields = temporalLogFields(
      entry({ error, durationMs: 7, attempt: 3, activityType: 'modelStep', workflowId: 'session-abc' }),
    );
    expect(fields).toEqual({
      source: 'temporal',
      error: 'connection failed: connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)',
      errorCode: 'STREAM_CUT',
      durationMs: 7,
      attempt: 3,
      activityType: 'modelStep',
      workflowId: 'session-abc',
      sessionId: 'abc',
    });
  });

  it('marks a non-retryable failure and keeps a plain error as its message', () => {
    const failure = ApplicationFailure.nonRetryable('not authorized (401): bad key', 'AUTH');
    expect(temporalLogFields(entry({ error: failure }))).toMatchObject({ errorCode: 'AUTH', nonRetryable: true });
    expect(temporalLogFields(entry({ error: new Error('boom') }))).toEqual({ source: 'temporal', error: 'boom' });
  });
});
