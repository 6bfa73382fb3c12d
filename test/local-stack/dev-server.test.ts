// The local Temporal stack against the real CLI: the run's shared dev server, a persistent server that
// survives a restart, registered search attributes, a slow start waited for while the server is alive,
// and clear failures for bad CLI paths.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { REQUIRED_DYNAMIC_CONFIG, devServerArgs, startDevServer } from '../../src/local-stack/dev-server.js';
import { alive } from '../../src/local-stack/stack-processes.js';
import { TEMPORAL_CLI_VERSION, resolveTemporalCli } from '../../src/local-stack/temporal-cli.js';
import { freezeGroup, thawAll, thawGroup } from '../helpers/freeze-group.js';
import { TEST_SEARCH_ATTRIBUTES } from '../setup/setup-pieces.js';

const address = inject('temporalAddress');
const namespace = inject('temporalNamespace');
const cliPath = inject('temporalCliPath');

const connections: Connection[] = [];
async function connect(to: string): Promise<Client> {
  const connection = await Connection.connect({ address: to });
  connections.push(connection);
  return new Client({ connection, namespace });
}
afterEach(async () => {
  thawAll();
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
});

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dh-local-stack-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('the run-wide dev server', () => {
  it('answers: its namespace is registered', async () => {
    const client = await connect(address);
    const described = await client.workflowService.describeNamespace({ namespace });
    expect(described.namespaceInfo?.name).toBe(namespace);
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('has the session search attributes registered, and a workflow can carry them', async () => {
    const client = await connect(address);
    const listed = await client.connection.operatorService.listSearchAttributes({ namespace });
    expect(Object.keys(listed.customAttributes ?? {})).toEqual(
      expect.arrayContaining(Object.keys(TEST_SEARCH_ATTRIBUTES)),
    );

    // Typed search attribute keys are plain { name, type } records.
    const status = { name: 'DhSessionStatus', type: 'KEYWORD' } as const;
    const turns = { name: 'DhTurns', type: 'INT' } as const;
    const totalTokens = { name: 'DhTotalTokens', type: 'INT' } as const;
    const workflowId = `sa-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const handle = await client.workflow.start('agentSession', {
      workflowId,
      taskQueue: `nobody-polls-${workflowId}`,
      args: [],
      typedSearchAttributes: [
        { key: status, value: 'running' },
        { key: turns, value: 3 },
        { key: totalTokens, value: 1234 },
      ],
    });
    try {
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(status)).toBe('running');
      expect(description.typedSearchAttributes.get(turns)).toBe(3);
      expect(description.typedSearchAttributes.get(totalTokens)).toBe(1234);
    } finally {
      await handle.terminate('test done');
    }
  });
});

describe('startDevServer', () => {
  it('keeps a workflow execution across stop and restart with a persistent dbFile', { timeout: 90_000 }, async () => {
    const dir = await tempDir();
    const dbFile = join(dir, 'temporal.db');
    const workflowId = 'persisted-workflow';

    const first = await startDevServer({ cliPath, dbFile, logFile: join(dir, 'server.log') });
    let firstPort: string;
    try {
      firstPort = first.address.split(':')[1] ?? '';
      const client = await connect(first.address);
      await client.workflow.start('agentSession', { workflowId, taskQueue: 'nobody-polls', args: [] });
    } finally {
      await Promise.all(connections.splice(0).map((connection) => connection.close()));
      await first.stop();
    }
    await expect(Connection.connect({ address: first.address, connectTimeout: 1_000 })).rejects.toThrow();

    const second = await startDevServer({ cliPath, dbFile, logFile: join(dir, 'server.log') });
    try {
      expect(second.address.split(':')[1]).not.toBe(firstPort);
      const client = await connect(second.address);
      const description = await client.workflow.getHandle(workflowId).describe();
      expect(description.workflowId).toBe(workflowId);
      expect(description.type).toBe('agentSession');
      expect(description.taskQueue).toBe('nobody-polls');
      expect(description.status.name).toBe('RUNNING');
    } finally {
      await Promise.all(connections.splice(0).map((connection) => connection.close()));
      await second.stop();
    }
  });

  it('passes the required dynamic config and JSON-quotes string values', () => {
    const args = devServerArgs(
      {
        cliPath,
        namespace: 'other',
        dynamicConfig: { 'limit.blobSize.error': 1024, 'some.stringKey': 'a "b"' },
        searchAttributes: { DhTurns: 'Int' },
      },
      { port: 7233, uiPort: null },
    );
    const values = args.flatMap((arg, i) => (args[i - 1] === '--dynamic-config-value' ? [arg] : []));
    expect(values).toEqual([
      'limit.blobSize.error=1024',
      'some.stringKey="a \\"b\\""',
      ...Object.entries(REQUIRED_DYNAMIC_CONFIG).map(([key, value]) => `${key}=${String(value)}`),
    ]);
    expect(args.slice(0, 6)).toEqual(['server', 'start-dev', '--ip', '127.0.0.1', '--port', '7233']);
    expect(args).toContain('--headless');
    expect(args.join(' ')).toContain('--namespace other');
    expect(args.join(' ')).toContain('--search-attribute DhTurns=Int');
  });

  it('unthrottles the transfer-queue reader and enables updates, and nothing else', () => {
    // Exactly this list: a setting dropped puts the ~50 ms dispatch floor back under every step.
    expect(REQUIRED_DYNAMIC_CONFIG).toEqual({
      'frontend.enableUpdateWorkflowExecution': true,
      'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
      'history.transferProcessorMaxPollRPS': 10000,
      'history.transferProcessorMaxPollHostRPS': 10000,
    });
    // A caller cannot throttle them again: the required values win.
    const args = devServerArgs(
      { cliPath, dynamicConfig: { 'history.transferProcessorMaxPollRPS': 20 } },
      { port: 7233, uiPort: null },
    );
    const values = args.flatMap((arg, i) => (args[i - 1] === '--dynamic-config-value' ? [arg] : []));
    expect(values).toContain('history.transferProcessorMaxPollRPS=10000');
    expect(values).not.toContain('history.transferProcessorMaxPollRPS=20');
  });

  it('starts with a UI and a non-default namespace', { timeout: 60_000 }, async () => {
    const server = await startDevServer({ cliPath, headless: false, namespace: 'dh-other' });
    try {
      expect(server.namespace).toBe('dh-other');
      expect(server.uiAddress).toMatch(/^127\.0\.0\.1:\d+$/);
      const response = await fetch(`http://${server.uiAddress}/`);
      expect(response.status).toBeLessThan(500);
      const client = await connect(server.address);
      const described = await client.workflowService.describeNamespace({ namespace: 'dh-other' });
      expect(described.namespaceInfo?.name).toBe('dh-other');
    } finally {
      await Promise.all(connections.splice(0).map((connection) => connection.close()));
      await server.stop();
    }
  });

  it('waits past its old 30 s deadline for a server held stopped for 35 s, saying so every 10 s', async () => {
    const progress: string[] = [];
    let held: Promise<boolean> | undefined;
    const started = Date.now();
    const server = await startDevServer({
      cliPath,
      progress: (line) => progress.push(line),
      onSpawn: (pid) => {
        held = freezeGroup(pid).then(async (stopped) => {
          await sleep(35_000);
          thawGroup(pid);
          return stopped;
        });
      },
    });
    const tookMs = Date.now() - started;
    try {
      await expect(held, 'the server was seen stopped').resolves.toBe(true);
      expect(tookMs).toBeGreaterThan(35_000);
      const client = await connect(server.address);
      const described = await client.workflowService.describeNamespace({ namespace: 'default' });
      expect(described.namespaceInfo?.name).toBe('default');
      expect(progress.length, progress.join('\n')).toBeGreaterThanOrEqual(3);
      const line = new RegExp(
        `^still waiting for the Temporal dev server on ${server.address.replace(/\./g, '\\.')} ` +
          `\\(pid ${server.pid}, \\d+ s, log \\+\\d+(\\.\\d)? (B|KB|MB)\\)$`,
      );
      for (const each of progress) expect(each).toMatch(line);
    } finally {
      await Promise.all(connections.splice(0).map((connection) => connection.close()));
      await server.stop();
    }
  }, 240_000);

  it('gives up at readyTimeoutMs on a server that stays stopped, and stops it', async () => {
    let pid = 0;
    let held: Promise<boolean> | undefined;
    const started = Date.now();
    const error = await startDevServer({
      cliPath,
      readyTimeoutMs: 3_000,
      onSpawn: (spawned) => {
        pid = spawned;
        held = freezeGroup(spawned);
      },
    }).then(
      async (server) => {
        await server.stop();
        return null;
      },
      (thrown: unknown) => thrown,
    );
    await expect(held, 'the server was seen stopped').resolves.toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(String(error)).toMatch(
      new RegExp(
        `the Temporal dev server at 127\\.0\\.0\\.1:\\d+ \\(pid ${pid}\\) was still running but did not answer within 3 s, so it was stopped`,
      ),
    );
    expect(alive(pid)).toBe(false);
  }, 60_000);

  it('fails with a clear message for a CLI path that does not exist', async () => {
    await expect(startDevServer({ cliPath: '/nonexistent/bin/temporal' })).rejects.toThrow(
      /Temporal CLI path "\/nonexistent\/bin\/temporal" is not an executable file/,
    );
  });

  it('fails with the output tail when the binary is not a Temporal CLI', async () => {
    const dir = await tempDir();
    const fake = join(dir, 'temporal');
    await writeFile(fake, '#!/bin/sh\necho "not a temporal server: $*" >&2\nexit 3\n', { mode: 0o755 });
    await expect(startDevServer({ cliPath: fake })).rejects.toThrow(
      /exited before it was ready \(exit 3\); last output:\nnot a temporal server: server start-dev/,
    );
  });
});

describe('resolveTemporalCli', () => {
  const saved = process.env.TEMPORAL_CLI_PATH;
  afterEach(() => {
    if (saved === undefined) delete process.env.TEMPORAL_CLI_PATH;
    else process.env.TEMPORAL_CLI_PATH = saved;
  });

  it('honours TEMPORAL_CLI_PATH', async () => {
    process.env.TEMPORAL_CLI_PATH = cliPath;
    await expect(resolveTemporalCli({ install: false })).resolves.toBe(cliPath);
  });

  it('names TEMPORAL_CLI_PATH when it points nowhere', async () => {
    process.env.TEMPORAL_CLI_PATH = '/nonexistent/temporal';
    await expect(resolveTemporalCli()).rejects.toThrow(
      /TEMPORAL_CLI_PATH is set to "\/nonexistent\/temporal", but there is no executable file there/,
    );
  });

  it('rejects a TEMPORAL_CLI_PATH that is not the Temporal CLI', async () => {
    const dir = await tempDir();
    const fake = join(dir, 'temporal');
    await writeFile(fake, '#!/bin/sh\necho "hello"\n', { mode: 0o755 });
    process.env.TEMPORAL_CLI_PATH = fake;
    await expect(resolveTemporalCli()).rejects.toThrow(/TEMPORAL_CLI_PATH .* is it the Temporal CLI\?/);
  });

  it('uses a TEMPORAL_CLI_PATH older than the pin as configured, saying so', async () => {
    const dir = await tempDir();
    const old = join(dir, 'temporal');
    await writeFile(old, '#!/bin/sh\necho "temporal version 1.4.0 (Server 1.28.0, UI 2.40.0)"\n', { mode: 0o755 });
    process.env.TEMPORAL_CLI_PATH = old;
    const log: string[] = [];
    await expect(resolveTemporalCli({ log: (line) => log.push(line) })).resolves.toBe(old);
    expect(log).toEqual([
      expect.stringMatching(
        /^note: the Temporal CLI from TEMPORAL_CLI_PATH \(.*\) is v1\.4\.0, older than the v\d+\.\d+\.\d+ dh pins/,
      ),
    ]);
  });

  it('pins the CLI version', () => {
    expect(TEMPORAL_CLI_VERSION).toBe('1.9.1');
  });
});
