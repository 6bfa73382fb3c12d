// `dh mcp ls`: the MCP servers this worker configuration names ($DH_HOME/mcp.json or DH_MCP_CONFIG),
// whether each starts, and the tools the model would see from it.
import type { Command } from 'commander';

export function registerMcpCommand(program: Command): void {
  const mcp = program.command('mcp').description('the MCP servers of this worker configuration');
  mcp
    .command('ls')
    .description('start each configured MCP server, list its tools as the model sees them, and stop it')
    .option('--json', 'print as JSON')
    // Loaded on use (mcp-action.ts): `dh --help` does not pay for the MCP SDK.
    .action((options: { json?: boolean }) => import('./mcp-action.js').then((a) => a.mcpLsCommand(options)));
}
