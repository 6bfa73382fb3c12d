// Operator commands over the log (log, show, audit, replay, fork, resume, export, import, demo).
// Owned by the operator-CLI work; registered here so main.ts stays stable. Exit codes: 0 ok,
// 1 failure (including a failed audit), 2 usage.
import type { Command } from 'commander';
import { parseSeq, parseSessionId, parseStepRef, usageErrorsExit2, type StepRef } from '../operator/cli-io.js';

// Loaded on use: `dh --help` and the other command groups do not pay for Temporal's worker SDK.
const actions = () => import('../operator/operator-actions.js');

export function registerOperatorCommands(program: Command): void {
  const add = (name: string) => usageErrorsExit2(program.command(name));

  add('log')
    .description('print a session log: one line per event, or JSONL with --json')
    .argument('<session>', 'session id', parseSessionId)
    .option('--json', 'the events as JSONL, exactly as stored')
    .option('--from <seq>', 'start at this seq', parseSeq)
    .action((session: string, options: { json?: boolean; from?: number }) =>
      actions().then((a) => a.logCommand(session, options)),
    );

  add('show')
    .description("a session's usage roll-up, or with --step the exact request the model saw at that step")
    .argument('<session>', 'session id', parseSessionId)
    .option('--step <T.S>', 'turn.step, e.g. 2.1: print the re-derived wire body of that step', parseStepRef)
    .option('--json', 'raw JSON: the wire body byte for byte (with --step) or the roll-up')
    .action((session: string, options: { step?: StepRef; json?: boolean }) =>
      actions().then((a) => a.showCommand(session, options)),
    );

  const audit = add('audit');
  audit
    .description(
      'audit a session: the log hash chain (and every row MAC with DH_LOG_KEY), every request re-derives to ' +
        'its recorded digest, prefix stability, expected vs reported cache reads, and the workflow history ' +
        'mirror (when Temporal is reachable); exits 1 on failure',
    )
    .argument('<session>', 'session id', parseSessionId)
    .option('--json', 'the full report as JSON')
    .option('--no-mirror', 'skip the workflow-history check (no Temporal connection)')
    .option(
      '--rejudge',
      "instead: judge every policy verdict again by today's policy file (offline) and name each one it would " +
        'decide differently; exits 1 if any',
    )
    .option(
      '--policy <file>',
      'with --rejudge: the policy file to judge by (default: DH_POLICY or $DH_HOME/policy.json)',
    )
    .option(
      '--workspace <dir>',
      "with --rejudge: resolve paths the verdicts did not record here (default: the session's)",
    )
    .option(
      '--ask-evaluators',
      "with --rejudge: put calls the rules leave open to the policy file's evaluator.llm again (online)",
    )
    .action(
      (
        session: string,
        options: {
          json?: boolean;
          mirror?: boolean;
          rejudge?: boolean;
          policy?: string;
          workspace?: string;
          askEvaluators?: boolean;
        },
      ) =>
        options.rejudge !== true &&
        (options.policy !== undefined || options.workspace !== undefined || options.askEvaluators === true)
          ? audit.error('error: --policy, --workspace and --ask-evaluators go with --rejudge', { exitCode: 2 })
          : options.rejudge === true
            ? import('../operator/rejudge-action.js').then((a) => a.rejudgeCommand(session, options))
            : actions().then((a) => a.auditCommand(session, options)),
    );

  add('replay')
    .description('offline (no key, no Temporal): re-derive and print every request in order, digest-checked')
    .argument('<session>', 'session id', parseSessionId)
    .option('--full', 'print every request whole (default: only what each adds to the previous one)')
    .option('--json', 'JSONL: one line per request with its wire body')
    .action((session: string, options: { json?: boolean; full?: boolean }) =>
      actions().then((a) => a.replayCommand(session, options)),
    );

  add('fork')
    .description('copy a session log up to a seq into a new session and start its workflow; prints the new id')
    .argument('<session>', 'session id', parseSessionId)
    .requiredOption('--at <seq>', 'the fork keeps seqs 0..seq-1 (must not fall inside a turn)', parseSeq)
    .option('--as <id>', 'the new session id (default: <session>-fork-<random>)', parseSessionId)
    .action((session: string, options: { at: number; as?: string }) =>
      actions().then((a) => a.forkCommand(session, options)),
    );

  add('resume')
    .description(
      'start a new run of a closed or failed session over its log (its open step is repaired; the next step logs a resume header)',
    )
    .argument('<session>', 'session id', parseSessionId)
    .action((session: string) => actions().then((a) => a.resumeCommand(session)));

  add('export')
    .description('write a session log as JSONL with its hash chain and MACs (attachments go to <out>.attachments/)')
    .argument('<session>', 'session id', parseSessionId)
    .option('--out <file.jsonl>', 'write here instead of stdout')
    .action((session: string, options: { out?: string }) => actions().then((a) => a.exportCommand(session, options)));

  add('import')
    .description(
      'create a session from a dh export file after validating every line and its hash chain (and every MAC ' +
        'with DH_LOG_KEY); refuses an invalid or forged log',
    )
    .argument('<file.jsonl>', 'a log written by dh export')
    .option('--as <id>', 'the session id to create (default: the one in the log)', parseSessionId)
    .action((file: string, options: { as?: string }) => actions().then((a) => a.importCommand(file, options)));

  add('demo')
    .description(
      'offline tour on the scripted provider: one session through followup, a tool call, steer, inject, ' +
        'interrupt and a worker crash, then its audit',
    )
    .option('--script <file>', 'the scripted provider script (default: examples/scripts/demo.yaml)')
    .action((options: { script?: string }) =>
      import('../operator/run-demo.js').then((demo) => demo.demoCommand(options)),
    );
}
