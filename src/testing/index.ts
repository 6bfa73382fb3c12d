// The package's `durable-harness/testing` entry: the test harness (a Temporal server, the scripted provider, a
// worker serving your agents, a client) and the script format the provider plays. The only entry that reaches
// the scripted provider and the Temporal CLI install: a product imports the others.
export { startTestHarness, type TestHarness, type TestHarnessOptions } from './start-test-harness.js';
export { TEST_MODEL, type ChatRequest, type TestProvider } from './test-provider.js';
export type { TestTemporalOptions } from './test-temporal.js';
export { TestHarnessErrorCode, type TestWorker } from './test-worker.js';
export type { LoadedScript, Reply, Script, ScriptToolCall } from '../scripted-provider/script.js';
export type { RecordedAnswer, RecordedRequest } from '../scripted-provider/start-scripted-provider.js';
export type { AuditReport } from '../audit/audit-session.js';
export type { SessionEvent } from '../core/events.js';
