// A confined MCP server runs one process per session workspace: started on the workspace's first call,
// rooted in that workspace, reused while calls come, and stopped once idle (real server-filesystem).
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../src/mcp/mcp-config.js';
import { McpServerSlot } from '../../src/mcp/mcp-hub.js';
import { filesystemStdio } from '../helpers/mcp-test-servers.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a confined MCP server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-mcp-idle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gets a process per workspace, reused while busy and stopped when idle', async () => {
    const fs = filesystemStdio(['${workspace}']);
    writeFileSync(
      join(dir, 'mcp.json'),
      JSON.stringify({ mcpServers: { fs: { command: fs.command, args: fs.args, confine: 'workspace' } } }),
    );
    const config = await loadMcpConfig({ home: dir, env: {} });
    const entry = config?.servers[0];
    if (!entry) throw new Error('no server');
    const slot = new McpServerSlot(entry, { env: {}, idleMs: 300 });
    const a = realpathSync(mkdtempSync(join(dir, 'ws-a-')));
    const b = realpathSync(mkdtempSync(join(dir, 'ws-b-')));
    try {
      const pidOf = (workspace: string) =>
        slot.with(workspace, async (connection) => {
          await connection.listTools();
          return connection.pid as number;
        });
      // While a call holds workspace a's process, another call there reuses it and workspace b gets its own.
      // (Checked inside the held call: "soon after" would race the 300 ms idle stop on a loaded machine,
      // where starting b's server alone can take longer than that.)
      const [pidA, reused, pidB] = await slot.with(a, async (connection) => {
        await connection.listTools();
        return [connection.pid as number, await pidOf(a), await pidOf(b)];
      });
      expect(pidA).toBeGreaterThan(0);
      expect(reused).toBe(pidA);
      expect(pidB).not.toBe(pidA);
      const deadline = Date.now() + 30_000;
      while ((alive(pidA) || alive(pidB)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect([alive(pidA), alive(pidB)]).toEqual([false, false]);
      // The next call starts a new one.
      const again = await pidOf(a);
      expect(again).not.toBe(pidA);
      expect(alive(again)).toBe(true);
    } finally {
      await slot.close();
    }
  }, 60_000);
});
