// The `stack` project's global setup: the Temporal CLI, the run's dev server and the session-workflow bundle.
import { composeSetup } from './compose-setup.js';
import { temporalCli, temporalDevServer, workflowBundle } from './setup-pieces.js';

export default composeSetup([temporalCli, temporalDevServer, workflowBundle]);
