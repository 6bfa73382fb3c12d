// How the workflow reads an activity's failure: the ApplicationFailure inside the ActivityFailure gives
// the turn's error code and message; anything else is ACTIVITY_FAILED with what it says.
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { failureMessage, failureType, turnError } from '../../src/workflows/failures.js';

const activityFailure = (cause?: Error) =>
  new ActivityFailure('activity failed', 'modelStep', '1', RetryState.NON_RETRYABLE_FAILURE, 'w', cause);

describe('activity failures', () => {
  it("reads the type and message of the activity's ApplicationFailure", () => {
    const error = activityFailure(ApplicationFailure.nonRetryable('the context is full', 'CONTEXT_LENGTH_EXCEEDED'));
    expect(failureType(error)).toBe('CONTEXT_LENGTH_EXCEEDED');
    expect(failureMessage(error)).toBe('the context is full');
    expect(turnError(error)).toEqual({ code: 'CONTEXT_LENGTH_EXCEEDED', message: 'the context is full' });
  });

  it('names anything else ACTIVITY_FAILED, with its own message', () => {
    expect(turnError(activityFailure(new Error('timed out')))).toEqual({
      code: 'ACTIVITY_FAILED',
      message: 'activity failed',
    });
    expect(turnError(ApplicationFailure.create({ message: 'not wrapped', type: 'X' }))).toEqual({
      code: 'ACTIVITY_FAILED',
      message: 'not wrapped',
    });
    expect(turnError('a string')).toEqual({ code: 'ACTIVITY_FAILED', message: 'a string' });
    // An ApplicationFailure without a type keeps the default code but its own message.
    expect(turnError(activityFailure(ApplicationFailure.create({ message: 'untyped' })))).toEqual({
      code: 'ACTIVITY_FAILED',
      message: 'untyped',
    });
    expect(failureType(activityFailure())).toBeUndefined();
  });
});
