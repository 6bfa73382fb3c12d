// The console API against its own OpenAPI document, judged by Schemathesis (an OpenAPI fuzzer nobody here
// wrote): every check, a fixed seed, a cap on examples per operation and on time, against the real stack
// (Temporal dev server, an in-process worker, the scripted provider, a SQLite store) with sessions in it (an
// idle one with tool calls, one waiting for approval, a closed one), a completed `dh eval` run and a worker's
// agents in the agent catalog. Schemathesis draws ids from those most of the time, so routes answer from real
// logs and workflows as well as 404 for ids nobody has.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SqliteAgentCatalog } from '../../src/agents/sqlite-agent-catalog.js';
import { SessionClient } from '../../src/client/session-client.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/console-server.js';
import { approvalShortId } from '../../src/core/index.js';
import { planEvalTargets } from '../../src/eval/plan-eval.js';
import { approvalPolicyPlugin } from '../../src/plugins/basic-plugins.js';
import { evalWorkflowId, type EvalRunInput } from '../../src/shared/eval-contracts.js';
import { closeSignal, followupSignal } from '../../src/shared/session-messages.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { startEvalWorker, type EvalWorker } from '../helpers/eval-worker.js';
import { echoTool, failTool } from '../helpers/test-tools.js';
import { startHarness, TEST_MODEL_2, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

/** Fixed: a failure reproduces with the same requests. */
const SEED = 48;
/** Per operation and phase; with the time cap below, a run takes about three minutes on two busy cores. */
const MAX_EXAMPLES = 25;
const MAX_TIME_SECONDS = 150;

/**
 * Every check Schemathesis has (`--checks all` less one): not `max_response_time`, which `all` turns on with a
 * 10 s limit. A timed assertion would fail on a busy machine, and a slow answer is not a contract broken.
 */
const CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
  'negative_data_rejection',
  'positive_data_acceptance',
  'missing_required_header',
  'unsupported_method',
  'allow_header_conformance',
  'use_after_free',
  'ensure_resource_availability',
  'ignored_auth',
  'object_level_authorization',
];

const FAILING_WARNINGS = [
  'missing_auth',
  'base_url_mismatch',
  'validation_mismatch',
  'missing_deserializer',
  'unused_openapi_auth',
  'unsupported_regex',
  'method_not_allowed',
  'constants_extraction',
  'unmatched_filter',
  'unresolvable_reference',
  'low_valid_rate',
  'rate_limited',
  'dictionary_mismatch',
  'timeout_units',
];

const SESSIONS = ['fz-idle', 'fz-waiting', 'fz-closed'];
const WAITING_CALL = 'fz-call-1';
const EVAL_RUN = 'fz-run';

/**
 * The statuses each check accepts, and why. A well-formed request may still name what is not there or not
 * possible now: 404 (a session, step or eval run nobody has), 409 (a closed session, no call waiting, a fork
 * point inside a turn, an id taken), and on the messages route 422 (an image nobody stored). A malformed one is
 * 400 (405 for a method the path does not list, 413 for a body over the limit, 415 for one that is not JSON, 404
 * when a path parameter is empty and names no route).
 * Never a 5xx: the server's own trouble would be a finding.
 */
const CONFIG = `
seed = ${SEED}
workers = 1
max-stream-events = 3
request-timeout = 120

[generation]
max-examples = ${MAX_EXAMPLES}
# No example database: a run replays nothing an earlier run found, so the seed alone decides what is sent.
database = "none"

# A warning fails the run too (a pattern it cannot read, a dictionary value the schema refuses, most requests
# refused as invalid, a documented method answered 405, …), but for \`missing_test_data\`: whether an operation
# happened to meet only 404s depends on how many cases the time allowed.
[warnings]
fail-on = ${JSON.stringify(FAILING_WARNINGS)}

[dictionaries.sessions]
values = ${JSON.stringify(SESSIONS)}

[dictionaries.calls]
values = ${JSON.stringify([WAITING_CALL, approvalShortId(WAITING_CALL)])}

[dictionaries.runs]
values = ${JSON.stringify([EVAL_RUN])}

[dictionaries.steps]
values = [1, 2]

[parameters]
"path.id" = { dictionary = "sessions", probability = 0.7 }
"path.callId" = { dictionary = "calls", probability = 0.5 }
"path.runId" = { dictionary = "runs", probability = 0.5 }
"path.turn" = { dictionary = "steps", probability = 0.5 }
"path.step" = { dictionary = "steps", probability = 0.5 }

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "404", "409"]

[checks.negative_data_rejection]
expected-statuses = ["400", "404", "405", "413", "415"]

[checks.not_a_server_error]
expected-statuses = ["2xx", "4xx"]

# A page token the server did not write (any string of the token's form) is PAGE_TOKEN_INVALID 400, and so is a
# \`since\` after the \`until\`: both are well-formed, neither is answerable.
[[operations]]
include-name = "GET /api/sessions"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400"]

# A message may cite an image no upload stored (any digest of the right form): ATTACHMENT_NOT_FOUND 422, refused at
# the door so that it never reaches a session.
[[operations]]
include-name = "POST /api/sessions/{id}/messages"
checks.positive_data_acceptance.expected-statuses = ["2xx", "404", "409", "422"]
`;

function runSchemathesis(cwd: string, args: readonly string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      inject('schemathesisPath'),
      args,
      // In the run's own directory: Schemathesis may leave files where it runs (reports, caches).
      { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

describe('the console API as its OpenAPI document says (Schemathesis)', () => {
  let h: Harness;
  let evalWorker: EvalWorker;
  let server: ConsoleServer;
  const dir = mkdtempSync(join(tmpdir(), 'dh-schemathesis-'));
  const channel = new MemoryDeltaChannel();
  const agents = SqliteAgentCatalog.open(':memory:');

  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'use a tool' },
            toolCalls: [{ id: 'fz-echo', name: 'echo', arguments: '{"text":"hi"}' }],
          },
          { match: { lastUserContains: 'use a tool' }, text: 'the tool said hi' },
          {
            match: { lastUserContains: 'needs approval' },
            toolCalls: [{ id: WAITING_CALL, name: 'fail', arguments: '{}' }],
          },
          // What the fuzzer's messages, compactions and forks ask of the model.
          { text: 'ok', repeat: 5_000 },
        ],
      },
      tools: [echoTool, failTool],
      plugins: [liveStreamPlugin(channel), approvalPolicyPlugin({ ask: ['fail'] })],
    });
    // A worker's agents in the catalog GET /api/agents lists.
    await agents.publish({ taskQueue: h.taskQueue, hostId: 'fz-host', pid: 1, instanceId: 'fz-worker' }, [
      { name: 'fz-agent', version: '0123456789ab', model: 'm', tools: ['echo', 'fail'], isDefault: true },
    ]);
    // Updates wait for the workflow: on a busy machine longer than the usual test console's 10 s.
    server = await startConsoleServer({
      store: h.store,
      agents,
      channel,
      sessions: new SessionClient(h.client, { taskQueue: h.taskQueue, timeoutMs: 60_000 }),
      derive: { profile: h.profile },
      uiDir: '/nonexistent-console-ui',
      port: 0,
      live: { pollMs: 50, statusEveryMs: 200, heartbeatMs: 300 },
    });
    const idle = await h.start('fz-idle');
    await idle.signal(followupSignal, { content: 'use a tool' });
    await waitForTurnEnd(h.store, 'fz-idle', 1);
    const waiting = await h.start('fz-waiting');
    await waiting.signal(followupSignal, { content: 'this needs approval' });
    await waitForState(waiting, (s) => s.pendingApproval?.callId === WAITING_CALL);
    const closed = await h.start('fz-closed');
    await closed.signal(followupSignal, { content: 'one turn, then close' });
    await waitForTurnEnd(h.store, 'fz-closed', 1);
    await closed.signal(closeSignal, {});
    await closed.result();
    // A completed eval run of fz-idle's steps on another model: its report is the eval route's answer.
    evalWorker = await startEvalWorker({
      store: h.store,
      script: { replies: [], default: { text: 'another answer' } },
    });
    const { targets } = await planEvalTargets((id) => h.store.read(id), ['fz-idle'], { runId: EVAL_RUN, at: 'step' });
    const run = await h.client.workflow.start('evalRun', {
      taskQueue: evalWorker.taskQueue,
      workflowId: evalWorkflowId(EVAL_RUN),
      args: [
        {
          runId: EVAL_RUN,
          change: { model: TEST_MODEL_2 },
          targets,
          concurrency: 1,
          at: Date.now(),
        } satisfies EvalRunInput,
      ],
    });
    await run.result();
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await agents.close();
    await evalWorker?.stop();
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes every check on every operation', async () => {
    const config = join(dir, 'schemathesis.toml');
    writeFileSync(config, CONFIG);
    const { code, output } = await runSchemathesis(dir, [
      '--config-file',
      config,
      'run',
      new URL('/api/openapi.json', server.url).toString(),
      '--checks',
      CHECKS.join(','),
      '--max-time',
      String(MAX_TIME_SECONDS),
      '--no-color',
    ]);
    // The summary goes to the log (cases generated, time); a failure's report names a curl command for each.
    console.log(output.slice(Math.max(0, output.search(/=+ (WARNINGS|SUMMARY) =+/))));
    expect(code, output.slice(-20_000)).toBe(0);
  }, 600_000);
});
