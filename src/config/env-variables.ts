// Every DH_* environment variable durable-harness reads, with a one-line meaning: the one list that
// docs/configuration.md documents and test/docs/docs-truth.test.ts holds the code and the docs to.
// Where each is parsed stays with its reader (worker-config.ts's zod `Env`, the local stack, the CLI...).

export type EnvVariableArea =
  /** The provider and the request it is sent (worker). */
  | 'provider'
  /** Where sessions, the stack and caches live. */
  | 'storage'
  /** The embedded local stack (`dh up`, `dh demo`, any command that needs Temporal). */
  | 'local-stack'
  /** The worker process: queues, hosts, caches, bundles. */
  | 'worker'
  /** Tools, approvals, subagents, MCP. */
  | 'tools'
  /** Keys: payload encryption, the log's MACs, the console's token. */
  | 'security'
  /** Logs and the `dh` launcher. */
  | 'diagnostics'
  /** Set by dh for its own child processes, or by tests; never needed by hand. */
  | 'internal'
  /** Knobs of `npm run bench` and `npm run live`. */
  | 'bench';

export interface EnvVariable {
  readonly name: `DH_${string}`;
  readonly area: EnvVariableArea;
  readonly meaning: string;
}

export const ENV_VARIABLES: readonly EnvVariable[] = [
  // provider
  { name: 'DH_PROVIDER', area: 'provider', meaning: 'deepseek, openai, or a lowercase name for a generic endpoint' },
  { name: 'DH_BASE_URL', area: 'provider', meaning: "the provider's base URL (required for a generic endpoint)" },
  { name: 'DH_MODEL', area: 'provider', meaning: 'the model id (required for a generic endpoint)' },
  { name: 'DH_API_KEY_ENV', area: 'provider', meaning: 'the name of the variable that holds the API key' },
  { name: 'DH_API_KEY', area: 'provider', meaning: "a generic endpoint's key when DH_API_KEY_ENV is not set" },
  { name: 'DH_THINKING', area: 'provider', meaning: 'DeepSeek thinking mode: enabled or disabled' },
  { name: 'DH_CONTEXT_WINDOW', area: 'provider', meaning: "the model's context window in tokens" },
  { name: 'DH_MAX_TOKENS', area: 'provider', meaning: "the answer's output limit, sent as max_tokens" },
  { name: 'DH_TEMPERATURE', area: 'provider', meaning: 'the sampling temperature, 0 to 2' },
  { name: 'DH_STREAM', area: 'provider', meaning: 'on (default) or off: one whole response per model call' },
  { name: 'DH_EXTRA_BODY', area: 'provider', meaning: 'a JSON object of extra request-body fields (generic endpoint)' },
  { name: 'DH_SYSTEM_PROMPT', area: 'provider', meaning: 'the system prompt' },
  {
    name: 'DH_PRICING',
    area: 'provider',
    meaning: 'model prices (USD per million tokens): a JSON object, or a JSON file path, over the defaults',
  },
  // storage
  { name: 'DH_HOME', area: 'storage', meaning: 'the data directory (default ~/.dh)' },
  {
    name: 'DH_STORE',
    area: 'storage',
    meaning: 'the session store: a SQLite path, postgres://…, or several postgres:// URLs (a sharded store)',
  },
  { name: 'DH_CACHE_DIR', area: 'storage', meaning: 'the per-user build and bundle cache directory' },
  // local stack
  { name: 'DH_TEMPORAL_PORT', area: 'local-stack', meaning: "the local Temporal dev server's gRPC port (7233)" },
  { name: 'DH_TEMPORAL_UI_PORT', area: 'local-stack', meaning: "the local dev server's Web UI port; 0 turns it off" },
  {
    name: 'DH_TEMPORAL_START_TIMEOUT_S',
    area: 'local-stack',
    meaning: 'seconds dh up / dh demo wait for the local Temporal dev server to answer (300)',
  },
  // worker
  { name: 'DH_TASK_QUEUE', area: 'worker', meaning: "the worker's task queue (dh-sessions)" },
  {
    name: 'DH_AGENTS',
    area: 'worker',
    meaning: 'the module of agents dh worker serves (as --agents), e.g. ./agents.ts',
  },
  { name: 'DH_HOST_ID', area: 'worker', meaning: "names this host's tool task queue (default: the hostname)" },
  { name: 'DH_MODEL_CONCURRENCY', area: 'worker', meaning: 'concurrent model calls per worker (16)' },
  { name: 'DH_WORKFLOW_CACHE_MAX', area: 'worker', meaning: 'session workflows a worker keeps cached between tasks' },
  { name: 'DH_WORKFLOW_BUNDLE', area: 'worker', meaning: 'a prebuilt session-workflow bundle to load' },
  { name: 'DH_WORKFLOW_BUNDLE_CACHE', area: 'worker', meaning: 'on (default) or off: the workflow bundle cache' },
  { name: 'DH_SESSION_CACHE_MAX', area: 'worker', meaning: 'sessions a worker keeps in memory (256)' },
  { name: 'DH_SESSION_CACHE_IDLE_MS', area: 'worker', meaning: 'ms idle before a cached session is dropped' },
  { name: 'DH_LIMITS', area: 'worker', meaning: 'fleet quotas, tenants and caps: a JSON file path, or the JSON' },
  { name: 'DH_RATE_LIMIT_RPM', area: 'worker', meaning: "the provider account's requests per minute, for the fleet" },
  { name: 'DH_RATE_LIMIT_TPM', area: 'worker', meaning: "the provider account's tokens per minute, for the fleet" },
  { name: 'DH_RATE_LIMIT_CONCURRENT', area: 'worker', meaning: 'model calls in flight at once across the fleet' },
  { name: 'DH_TENANT', area: 'worker', meaning: "the tenant this worker's sessions belong to (its quota applies)" },
  { name: 'DH_SESSION_COST_CAP_USD', area: 'worker', meaning: 'what one session may spend, in USD (fails closed)' },
  // tools
  { name: 'DH_SHELL_SANDBOX', area: 'tools', meaning: "the shell tool's sandbox: auto, bwrap or none" },
  { name: 'DH_APPROVAL_ASK', area: 'tools', meaning: 'comma-separated tool names that pause for approval' },
  { name: 'DH_APPROVAL_DENY', area: 'tools', meaning: 'comma-separated tool names that never run' },
  { name: 'DH_SUBAGENT_DEPTH', area: 'tools', meaning: 'how deep subagents may go; 1 or more offers delegate' },
  { name: 'DH_POLICY', area: 'tools', meaning: 'the tool policy file (default $DH_HOME/policy.json)' },
  { name: 'DH_MCP_CONFIG', area: 'tools', meaning: 'the MCP servers file (default $DH_HOME/mcp.json)' },
  // security
  { name: 'DH_PAYLOAD_KEY', area: 'security', meaning: 'the AES-256-GCM key that encrypts Temporal payloads' },
  { name: 'DH_PAYLOAD_KEY_PREVIOUS', area: 'security', meaning: 'older payload keys, still accepted to decrypt' },
  { name: 'DH_LOG_KEY', area: 'security', meaning: 'the HMAC key that MACs every stored log row' },
  { name: 'DH_UI_TOKEN', area: 'security', meaning: 'the bearer token dh ui requires off loopback' },
  // diagnostics
  { name: 'DH_LOG_LEVEL', area: 'diagnostics', meaning: "the worker's log level: debug, info, warn, error, silent" },
  { name: 'DH_BIN_TRACE', area: 'diagnostics', meaning: '1: bin/dh.mjs says whether it ran the build or the sources' },
  { name: 'DH_BIN_FROM_SOURCE', area: 'diagnostics', meaning: '1: bin/dh.mjs runs the TypeScript sources' },
  { name: 'DH_TRACE_TIMING', area: 'diagnostics', meaning: '1: dh run prints when it sends and Temporal accepts' },
  // internal
  {
    name: 'DH_WORKER_READY_FILE',
    area: 'internal',
    meaning: 'set by dh for a worker it starts: the file it writes its pid to when ready',
  },
  { name: 'DH_DEMO_API_KEY', area: 'internal', meaning: "set by dh demo: its worker's stand-in API key" },
  { name: 'DH_AUDIT_NO_KEY', area: 'internal', meaning: "never set: the key variable of the audit's stand-in profile" },
  { name: 'DH_FAILPOINTS', area: 'internal', meaning: 'crash tests: failpoints where the worker kills itself' },
  { name: 'DH_FAILPOINT_LOG', area: 'internal', meaning: 'crash tests: the file each failpoint hit is noted in' },
  // bench and live checks
  { name: 'DH_LIVE_MODEL', area: 'bench', meaning: 'npm run live: the DeepSeek model (deepseek-v4-flash)' },
  { name: 'DH_LIVE_PAUSE_MS', area: 'bench', meaning: 'npm run live: ms between requests (3000)' },
  { name: 'DH_BENCH_PROVIDER_KEY', area: 'bench', meaning: "set by the bench: its workers' stand-in API key" },
  { name: 'DH_BENCH_BARE_WORKER_CONFIG', area: 'bench', meaning: 'set by the cluster bench for its bare workers' },
  { name: 'DH_BENCH_OVERHEAD_STEPS', area: 'bench', meaning: 'overhead: tool steps per run (20)' },
  { name: 'DH_BENCH_STREAM_ROUNDS', area: 'bench', meaning: 'stream: rounds of the reconnect figure (10)' },
  { name: 'DH_BENCH_OVERHEAD_ROUNDS', area: 'bench', meaning: 'overhead: rounds (3)' },
  { name: 'DH_BENCH_THROUGHPUT_LEVELS', area: 'bench', meaning: 'throughput: concurrent sessions (1,10,100)' },
  { name: 'DH_BENCH_ACK_LEVELS', area: 'bench', meaning: 'ack: sessions at once (1,10)' },
  { name: 'DH_BENCH_ACK_SESSIONS', area: 'bench', meaning: 'ack: sessions per level (20)' },
  { name: 'DH_BENCH_ACK_SIGNALS', area: 'bench', meaning: 'ack: busy messages per session (10)' },
  { name: 'DH_BENCH_THROUGHPUT_STEPS', area: 'bench', meaning: 'throughput: tool steps per turn (4)' },
  { name: 'DH_BENCH_THROUGHPUT_ROUNDS', area: 'bench', meaning: 'throughput: rounds (3)' },
  { name: 'DH_BENCH_FIRST_TOKEN_ROUNDS', area: 'bench', meaning: 'first-token: rounds (15)' },
  { name: 'DH_BENCH_DH_RUN_ROUNDS', area: 'bench', meaning: 'dh-run: rounds (3)' },
  { name: 'DH_BENCH_DH_RUN_TURNS', area: 'bench', meaning: 'dh-run: turns per stack (3)' },
  { name: 'DH_BENCH_DH_RUN_STEPS', area: 'bench', meaning: 'dh-run: tool steps per turn (10)' },
  { name: 'DH_BENCH_CLI_START_ROUNDS', area: 'bench', meaning: 'cli-start: rounds (15)' },
  { name: 'DH_BENCH_WORKER_START_ROUNDS', area: 'bench', meaning: 'worker-start: rounds (5)' },
  { name: 'DH_BENCH_IDLE_SESSIONS', area: 'bench', meaning: 'idle: idle sessions (1000)' },
  { name: 'DH_BENCH_IDLE_WAKES', area: 'bench', meaning: 'idle: wakes measured (50)' },
  { name: 'DH_BENCH_IDLE_WORKFLOW_CACHE', area: 'bench', meaning: "idle: the worker's workflow cache cap" },
  { name: 'DH_BENCH_IDLE_TRACING', area: 'bench', meaning: 'idle: 1 bundles the tracing interceptors' },
  { name: 'DH_BENCH_COST_EVENTS', area: 'bench', meaning: 'cost: events in the gated log (10000)' },
  { name: 'DH_BENCH_CACHE_TURNS', area: 'bench', meaning: 'cache: turns (50)' },
  { name: 'DH_BENCH_HISTORY_TURNS', area: 'bench', meaning: 'history: turns (50)' },
  { name: 'DH_BENCH_LONG_TURNS', area: 'bench', meaning: 'long: turns of the unbounded session (1000)' },
  { name: 'DH_BENCH_CLUSTER_SESSIONS', area: 'bench', meaning: 'cluster: sessions (100)' },
  { name: 'DH_BENCH_CLUSTER_WORKERS', area: 'bench', meaning: 'cluster: most worker processes (3)' },
  { name: 'DH_BENCH_CLUSTER_ROUNDS', area: 'bench', meaning: 'cluster: rounds (3)' },
  { name: 'DH_BENCH_FLEET_SESSIONS', area: 'bench', meaning: 'fleet: sessions of the quota runs (200)' },
  { name: 'DH_BENCH_FLEET_STEPS', area: 'bench', meaning: 'fleet: model steps per session (5)' },
  { name: 'DH_BENCH_FLEET_RPM', area: 'bench', meaning: "fleet: the scripted provider's requests per minute (600)" },
  { name: 'DH_BENCH_FLEET_CAP_S', area: 'bench', meaning: 'fleet: seconds the no-limiter run is waited for (120)' },
  { name: 'DH_BENCH_FLEET_ROUNDS', area: 'bench', meaning: 'fleet: rounds of the overhead runs (3)' },
  { name: 'DH_BENCH_FLEET_TENANTS', area: 'bench', meaning: 'fleet: 0 skips the two-tenant run' },
];

/** The registry's entry for `name`, or undefined when dh does not read it. */
export function envVariable(name: string): EnvVariable | undefined {
  return ENV_VARIABLES.find((variable) => variable.name === name);
}
