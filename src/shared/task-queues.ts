// Task-queue names derived from a worker's base queue: workflows and log appends on the base queue,
// model calls on their own queue (a concurrency limit per provider key), tool steps on the queue of
// the host that holds the session's workspace.

export function modelTaskQueue(base: string): string {
  return `${base}-model`;
}

export function hostTaskQueue(base: string, hostId: string): string {
  return `${base}-host-${hostId}`;
}
