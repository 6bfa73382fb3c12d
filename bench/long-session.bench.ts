// The unbounded-session figures: a 1,000-turn tool-using session across compactions and
// continue-as-new (bounded request size, bounded history per run, nothing lost).
import { bundleSessionWorkflows } from '../src/local-stack/bundle-workflows.js';
import { resolveTemporalCli } from '../src/local-stack/temporal-cli.js';
import { runLongSession } from '../test/helpers/long-session.js';
import { fmt, type BenchSection } from './measure.js';

export async function longSessionBench(
  turns = Number(process.env.DH_BENCH_LONG_TURNS ?? 1000),
): Promise<BenchSection[]> {
  const { codePath } = await bundleSessionWorkflows();
  const report = await runLongSession({ cliPath: await resolveTemporalCli(), workflowBundlePath: codePath, turns });
  const rows = [
    ['turns completed', `${report.completedTurns} / ${report.turns}`],
    ['every message claimed exactly once, in order', report.claimedInOrder ? 'yes' : 'NO'],
    ['history mirrors the log', report.mirrorProblem === null ? 'yes' : `NO: ${report.mirrorProblem}`],
    ['compactions', String(report.compactions)],
    ['continue-as-new hand-overs', String(report.continueAsNew)],
    [
      'max request tokens (provider-reported) / context window',
      `${report.maxRequestTokens} / ${report.contextWindow} (${fmt((100 * report.maxRequestTokens) / report.contextWindow, 0)} %)`,
    ],
    ['max history events per run', String(report.maxHistoryEvents)],
    ['max history bytes per run (JSON)', report.maxHistoryBytes.toLocaleString('en')],
    ['session log events', report.logEvents.toLocaleString('en')],
    ['total wall time', `${fmt(report.wallMs / 1000, 1)} s (${fmt(report.wallMs / report.turns, 0)} ms per turn)`],
  ];
  return [
    {
      title: 'Unbounded session',
      command: 'npm run bench -- --only long',
      body: [
        `A scripted ${turns}-turn session, each turn one tool call and an answer, on the scripted provider with a`,
        `${report.contextWindow}-token context window (so compaction runs every few turns) and a Temporal server that`,
        'suggests continue-as-new after 400 history events. Followups arrive in batches while earlier turns run.',
        '',
        '| figure | value |',
        '| --- | ---: |',
        ...rows.map(([k, v]) => `| ${k} | ${v} |`),
      ].join('\n'),
    },
  ];
}
