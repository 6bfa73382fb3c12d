// The `system` project's global setup: the stack's pieces (started once when both projects run) and what the
// machine must install or build: PostgreSQL, the cluster tests' Temporal server, bubblewrap, chromium,
// llama-cpp-python with a small model, and Schemathesis.
import { composeSetup } from './compose-setup.js';
import {
  bubblewrap,
  chromium,
  llamaCppPython,
  postgres,
  schemathesis,
  temporalCli,
  temporalDevServer,
  temporalServerBinaries,
  workflowBundle,
} from './setup-pieces.js';

export default composeSetup([
  bubblewrap,
  chromium,
  postgres,
  temporalCli,
  temporalDevServer,
  temporalServerBinaries,
  llamaCppPython,
  schemathesis,
  workflowBundle,
]);
