// An MCP server over streamable HTTP that goes away mid-call: the SDK would leave the call waiting for its
// timeout, so dh fails it as soon as the transport cannot reach the server again (real server-everything
// over HTTP, SIGKILLed while a long call reports progress).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../src/mcp/mcp-config.js';
import { startMcpHub, type McpHub } from '../../src/mcp/mcp-hub.js';
import { mcpTools } from '../../src/mcp/mcp-tools.js';
import type { ToolContext } from '../../src/plugins/contracts.js';
import { startEverythingHttp } from '../helpers/mcp-test-servers.js';

describe('an MCP server over HTTP that goes away mid-call', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-mcp-http-gone-'));
  let hub: McpHub | undefined;
  afterAll(async () => {
    await hub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails the pending call within seconds, not at its 60 s timeout', async () => {
    const server = await startEverythingHttp();
    try {
      writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcpServers: { remote: { url: server.url } } }));
      const config = await loadMcpConfig({ home: dir, env: {} });
      if (!config) throw new Error('no config');
      hub = await startMcpHub(config, { env: {}, strict: true });
      const long = mcpTools(hub).find((t) => t.schema.name === 'mcp__remote__trigger-long-running-operation');
      if (!long) throw new Error('no long-running tool');
      let progressed = 0;
      const context: ToolContext = {
        sessionId: 's',
        callId: 'c1',
        workspace: dir,
        signal: new AbortController().signal,
        progress: () => (progressed += 1),
      };
      const call = long.run({ duration: 50, steps: 50 }, context);
      const deadline = Date.now() + 30_000;
      while (progressed === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(progressed).toBeGreaterThan(0);
      const killedAt = Date.now();
      process.kill(server.pid, 'SIGKILL');
      const result = await call;
      expect(Date.now() - killedAt).toBeLessThan(30_000);
      expect(result.status).toBe('error');
      expect(result.output).toMatch(/The MCP server "remote" failed: .*went away/);
    } finally {
      await server.stop();
    }
  }, 90_000);
});
