// The workflow bundle's entry point (`workflowsPath`): workflow functions only.
export { agentSession } from './session-workflow.js';
export { evalRun } from './eval-workflow.js';
