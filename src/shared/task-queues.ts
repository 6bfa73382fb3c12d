// Task-queue names derived from a worker's base queue: workflows and log appends on the base queue,
// model calls on a queue of each host (where the session's caches and workspace are) with the shared model
// queue as the fallback, tool steps on the queue of the host that holds the session's workspace.

export function modelTaskQueue(base: string): string {
  return `${base}-model`;
}

export function hostTaskQueue(base: string, hostId: string): string {
  return `${base}-host-${hostId}`;
}

/** The model queue of one host (`<base>-model-host-<id>`: no host id makes it equal another queue's name). */
export function hostModelTaskQueue(base: string, hostId: string): string {
  return `${base}-model-host-${hostId}`;
}

/** The model queue of the host whose tool queue is `hostQueue`, when that is one of `base`'s host queues. */
export function modelQueueOfHost(base: string, hostQueue: string): string | undefined {
  const prefix = hostTaskQueue(base, '');
  const hostId = hostQueue.startsWith(prefix) ? hostQueue.slice(prefix.length) : '';
  return hostId === '' ? undefined : hostModelTaskQueue(base, hostId);
}
