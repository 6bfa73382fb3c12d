// The environment a test harness's worker runs with: the machine's own settings (PATH, the caches, the
// Temporal CLI) and what the harness chose (home, store, Temporal, task queue, the scripted provider), never the
// DH_* or TEMPORAL_* settings of the shell the tests were started from — they could point it at a real provider.

/** Settings of the machine, not of a worker: a test worker keeps them from the shell. */
const MACHINE_VARIABLES: readonly string[] = [
  'DH_CACHE_DIR',
  'DH_LOG_LEVEL',
  'DH_TEMPORAL_START_TIMEOUT_S',
  'DH_WORKFLOW_BUNDLE',
  'DH_WORKFLOW_BUNDLE_CACHE',
  'TEMPORAL_CLI_PATH',
];

export interface WorkerEnvInput {
  readonly home: string;
  readonly store: string;
  readonly temporal: { readonly address: string; readonly namespace: string };
  /** TLS settings of the shell apply to a server the harness did not start (TEMPORAL_TLS_*). */
  readonly temporalIsExternal: boolean;
  readonly taskQueue: string;
  readonly hostId: string;
  readonly providerURL: string;
  readonly model: string;
  /** The caller's own variables, last: they win. */
  readonly extra?: Readonly<Record<string, string>>;
}

/** The worker's whole environment, from `parent` (default: this process's). */
export function workerEnv(input: WorkerEnvInput, parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    const dhSetting = name.startsWith('DH_') || name.startsWith('TEMPORAL_');
    const keepTls = input.temporalIsExternal && name.startsWith('TEMPORAL_TLS');
    if (!dhSetting || keepTls || MACHINE_VARIABLES.includes(name)) env[name] = value;
  }
  return {
    ...env,
    DH_HOME: input.home,
    DH_STORE: input.store,
    TEMPORAL_ADDRESS: input.temporal.address,
    TEMPORAL_NAMESPACE: input.temporal.namespace,
    DH_TASK_QUEUE: input.taskQueue,
    // The tool queue is named by the host: a restarted worker with the same id takes over the killed one's calls.
    DH_HOST_ID: input.hostId,
    DH_PROVIDER: 'scripted',
    DH_BASE_URL: input.providerURL,
    DH_MODEL: input.model,
    ...input.extra,
  };
}
