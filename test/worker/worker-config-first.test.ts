// `dh worker` checks its configuration files before it asks the provider anything: a broken tool policy or MCP
// file stops the start with its one INVALID_CONFIG line, with no context-window probe before it (no warning
// about the endpoint, no `/v1/models` request at the scripted provider it is configured for).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { dh, show, testStackEnv, TEST_MODEL, type TestStackEnv } from '../cli/live-harness.js';

describe('a worker with a broken configuration file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-config-first-'));
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  beforeAll(async () => {
    // A generic endpoint (DH_PROVIDER=scripted) without DH_CONTEXT_WINDOW: a worker that got as far as the probe
    // asks it for the model's window, and warns that it reports none.
    provider = await startScriptedProvider({ script: { models: [TEST_MODEL], replies: [] } });
    stack = testStackEnv(provider.url);
  });
  afterAll(async () => {
    await provider?.close();
    stack?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a broken DH_POLICY: the INVALID_CONFIG line alone, and the provider never asked', async () => {
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, '{\n  "rules": [\n    { "id": "a", "tool": "shell", "outcome": "allow", }\n  ]\n}\n');
    const r = await dh(['worker'], { ...stack.env, DH_POLICY: policy });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr.trim().split('\n'), show(r)).toEqual([
      expect.stringMatching(new RegExp(`^dh: invalid tool policy in ${policy}: not valid JSON: .*line 3, column \\d+`)),
    ]);
    expect(provider.requests().map((req) => `${req.method} ${req.path}`)).toEqual([]);
  });

  it('a broken MCP file: the same', async () => {
    const mcp = join(dir, 'mcp.json');
    writeFileSync(mcp, '{ "mcpServers": { "x": { "command": 7 } } }\n');
    const r = await dh(['worker'], { ...stack.env, DH_MCP_CONFIG: mcp });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr.trim().split('\n'), show(r)).toEqual([
      expect.stringMatching(new RegExp(`^dh: invalid MCP configuration.*${mcp}`)),
    ]);
    expect(provider.requests().map((req) => `${req.method} ${req.path}`)).toEqual([]);
  });
});
