// The error codes of the embedded local stack (DhError codes callers may branch on).

export const LocalStackErrorCode = {
  StartFailed: 'LOCAL_STACK_START_FAILED',
  PortTaken: 'LOCAL_STACK_PORT_TAKEN',
  Locked: 'LOCAL_STACK_LOCKED',
} as const;
