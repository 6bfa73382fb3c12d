// What `dh mcp ls` does (mcp-command.ts defines it): loads the configuration as a worker would, starts
// every server (a failing one is reported, not fatal), prints servers and tools, and stops them. Exit 1
// when a server fails to start, as the worker would refuse to start.
import { readWorkerConfig } from '../../config/worker-config.js';
import { loadMcpConfig } from '../../mcp/mcp-config.js';
import { startMcpHub } from '../../mcp/mcp-hub.js';
import { MCP_TOOL_PREFIX } from '../../mcp/mcp-tool-name.js';
import { mcpTools } from '../../mcp/mcp-tools.js';
import { cliAction } from '../cli-action.js';
import { ExitCode } from '../exit-codes.js';

export const mcpLsCommand = cliAction(async (options: { json?: boolean }) => {
  const config = readWorkerConfig();
  const file = await loadMcpConfig({ home: config.home, env: process.env });
  if (!file) {
    const where = process.env.DH_MCP_CONFIG ?? `${config.home}/mcp.json`;
    if (options.json) process.stdout.write(`${JSON.stringify({ file: null, servers: [] }, null, 2)}\n`);
    else process.stdout.write(`no MCP servers configured (${where} does not exist)\n`);
    return ExitCode.Ok;
  }
  const hub = await startMcpHub(file, { env: process.env });
  try {
    const tools = mcpTools(hub);
    const servers = hub.status.map((s) => ({
      name: s.name,
      transport: s.transport,
      confined: s.confined,
      state: s.state,
      ...(s.error !== undefined ? { error: s.error } : {}),
      tools: tools.filter((t) => t.schema.name.startsWith(`${MCP_TOOL_PREFIX}${s.name}__`)).map((t) => t.schema.name),
      unsupported: s.unsupported,
    }));
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ file: file.file, servers }, null, 2)}\n`);
    } else {
      process.stdout.write(`MCP servers from ${file.file}:\n`);
      for (const s of servers) {
        const how = `${s.transport}${s.confined ? ', confined to the session workspace' : ''}`;
        process.stdout.write(
          s.state === 'ready'
            ? `  ${s.name} (${how}): ${s.tools.length} tools\n${s.tools.map((t) => `    ${t}\n`).join('')}` +
                (s.unsupported.length > 0 ? `    (left out, they need MCP tasks: ${s.unsupported.join(', ')})\n` : '')
            : `  ${s.name} (${how}): FAILED: ${s.error ?? 'unknown'}\n`,
        );
      }
    }
    return servers.some((s) => s.state === 'failed') ? ExitCode.Error : ExitCode.Ok;
  } finally {
    await hub.close();
  }
});
