// The marker a worker's payload codec hands the workflow in place of an input it cannot decrypt (see
// AesGcmPayloadCodec's `onUndecryptable: 'mark'`): the workflow refuses that one message by its reason.

/** `metadata.encoding` of the marker; no payload converter knows it, so nothing decodes it by accident. */
export const UNDECRYPTABLE_ENCODING = 'dh/undecryptable';
/** `metadata` key holding why the payload could not be opened (never key material). */
export const UNDECRYPTABLE_REASON_METADATA = 'dh-reason';
