// The workflow's own definitions of the session's signals and updates: the names of the client-side ones
// (src/shared/session-messages.ts), but every argument arrives undecoded, as its payload.
import { rawValueTypeInfo, type RawValue, type TypeInfo } from '@temporalio/common';
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import {
  approveUpdate,
  closeSignal,
  compactUpdate,
  configureUpdate,
  type ConfigureResult,
  followupSignal,
  injectSignal,
  interruptSignal,
  sendUpdate,
  steerSignal,
  type SendReceipt,
} from '../shared/session-messages.js';

/** The arguments of a raw signal or update: one payload per argument the sender gave (any number). */
export type RawArguments = RawValue[];

/**
 * `rawValueTypeInfo` at every index. The SDK decodes a signal's or update's arguments before any handler
 * runs; one it cannot decode (an unknown encoding, bytes that are not JSON, a codec's marker) throws
 * there and fails the workflow task, on every retry, so one poison message would wedge the session.
 * A raw argument skips the payload converter; the SDK reads `inputTypes[index]` per argument, so a
 * proxy that answers any index covers a sender that adds arguments too.
 */
const EVERY_ARGUMENT_RAW: readonly TypeInfo[] = new Proxy<TypeInfo[]>([], {
  get: (target, key, receiver) =>
    typeof key === 'string' && /^(0|[1-9]\d*)$/.test(key)
      ? rawValueTypeInfo
      : (Reflect.get(target, key, receiver) as unknown),
});
const RAW = { typeInfo: { inputTypes: EVERY_ARGUMENT_RAW } };

export const rawFollowupSignal = defineSignal<RawArguments>(followupSignal.name, RAW);
export const rawSteerSignal = defineSignal<RawArguments>(steerSignal.name, RAW);
export const rawInjectSignal = defineSignal<RawArguments>(injectSignal.name, RAW);
/** Takes no payload: whatever it carries is never decoded. */
export const rawInterruptSignal = defineSignal<RawArguments>(interruptSignal.name, RAW);
/** Takes no payload: whatever it carries is never decoded. */
export const rawCloseSignal = defineSignal<RawArguments>(closeSignal.name, RAW);
export const rawSendUpdate = defineUpdate<SendReceipt, RawArguments>(sendUpdate.name, RAW);
export const rawApproveUpdate = defineUpdate<{ callId: string; decision: 'approve' | 'deny' }, RawArguments>(
  approveUpdate.name,
  RAW,
);
export const rawCompactUpdate = defineUpdate<{ accepted: true }, RawArguments>(compactUpdate.name, RAW);
export const rawConfigureUpdate = defineUpdate<ConfigureResult, RawArguments>(configureUpdate.name, RAW);
