// What `dh agents ls` does; agents-command.ts defines it and loads this module when it runs.
import { openAgentCatalog } from '../../agents/open-agent-catalog.js';
import type { ListedAgent } from '../../agents/agent-catalog.js';
import { cliAction } from '../cli-action.js';
import { textTable } from '../text-table.js';
import { loadCliConfig } from '../cli-context.js';
import { usageError } from '../exit-codes.js';
import { noLiveAgentsLine } from '../served-agents.js';

export interface AgentsLsOptions {
  json?: boolean;
  taskQueue?: string;
}

/** Tools named in the table before the rest are counted (`--json` has them all). */
const TOOLS_SHOWN = 5;

export const agentsLsCommand = cliAction(async (options: AgentsLsOptions) => {
  const taskQueue = options.taskQueue;
  if (taskQueue !== undefined && taskQueue.trim() === '') throw usageError('--task-queue is empty');
  const config = loadCliConfig();
  const catalog = await openAgentCatalog(config.store);
  let listed: ListedAgent[];
  try {
    listed = await catalog.list(taskQueue !== undefined ? { taskQueue } : {});
  } finally {
    await catalog.close();
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
    return;
  }
  if (listed.length === 0) {
    process.stdout.write(`${noLiveAgentsLine(taskQueue)}\n`);
    return;
  }
  const now = Date.now();
  const table = [
    ['TASK QUEUE', 'AGENT', 'VERSION', 'DEFAULT', 'MODEL', 'TOOLS', 'WORKERS', 'LAST SEEN'],
    ...listed.map((a) => [
      a.taskQueue,
      a.name,
      a.version,
      a.default ? 'yes' : '',
      a.model,
      toolsCell(a.tools),
      String(a.workers),
      `${Math.max(0, Math.round((now - a.lastSeenAt) / 1000))}s ago`,
    ]),
  ];
  for (const line of textTable(table)) process.stdout.write(`${line}\n`);
});

function toolsCell(tools: readonly string[]): string {
  if (tools.length === 0) return '-';
  const shown = tools.slice(0, TOOLS_SHOWN).join(',');
  return tools.length > TOOLS_SHOWN ? `${shown},+${tools.length - TOOLS_SHOWN} more` : shown;
}
