// A sharded session store under a cluster: dh's store on two PostgreSQL servers (shard 0 on the cluster's own,
// shard 1 on a second one), three hosts' workers, and shard 1's PostgreSQL SIGKILLed mid-turn. Sessions on
// shard 0 end their turns while it is down; those on shard 1 wait, resume when it is back, and every session
// checks clean: every turn ended, every message logged once, no dangling call, the audit and the mirror hold.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import type { Script } from '../../src/scripted-provider/script.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { ShardedSessionStore } from '../../src/stores/sharded-session-store.js';
import { ZERO_COUNTS } from '../helpers/chaos/check-trial.js';
import { checkSessions, startClusterTrial, until, untilAllSettled } from '../helpers/cluster-trial.js';
import { ofType, turnEnds } from '../helpers/log-views.js';
import { TEST_MODEL } from '../helpers/session-harness.js';
import { databaseUrl, startTestCluster, type TestCluster } from '../helpers/test-cluster.js';
import { startPostgres, type TestPostgres } from '../setup/postgres.js';

const HOSTS = ['host-a', 'host-b', 'host-c'] as const;
const SESSIONS = 16;
const tagOf = (sessionId: string) => sessionId.slice(sessionId.lastIndexOf('-') + 1);

async function createDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return databaseUrl(serverUrl, name);
}

/** Each session's workflow status and how its last run ended, and the workers' output, added to a failure. */
async function diagnoseWith(
  client: Client,
  error: unknown,
  sessionIds: readonly string[],
  outputs: string,
): Promise<Error> {
  const lines = await Promise.all(
    sessionIds.map(async (id) => {
      const handle = client.workflow.getHandle(sessionWorkflowId(id));
      const status = await handle.describe().then(
        (d) => d.status.name,
        (e: unknown) => String(e),
      );
      const history = await handle.fetchHistory().catch(() => null);
      const failures = (history?.events ?? []).flatMap((e) => {
        const failure =
          e.workflowExecutionFailedEventAttributes?.failure ?? e.workflowTaskFailedEventAttributes?.failure;
        return failure ? [`${failure.message ?? ''} ${failure.cause?.message ?? ''}`] : [];
      });
      return `${id}: ${status} ${failures.slice(-2).join(' | ')}`;
    }),
  );
  return new Error([(error as Error).message, ...lines, outputs].join('\n'), { cause: error });
}

describe('cluster with a sharded store: one shard SIGKILLed and restarted', () => {
  let testCluster: TestCluster;
  let second: TestPostgres;
  let store: ShardedSessionStore;
  let storeSpec: string;
  let connection: Connection;
  let client: Client;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-cluster-shards-'));
    [testCluster, second] = await Promise.all([
      startTestCluster(
        { server: inject('temporalServerPath'), sqlTool: inject('temporalSqlToolPath') },
        inject('postgresUrl'),
        'cluster_shards',
      ),
      startPostgres({ own: true }),
    ]);
    const tag = randomUUID().replaceAll('-', '').slice(0, 10);
    const urls = [
      await createDatabase(inject('postgresUrl'), `dh_shard0_${tag}`),
      await createDatabase(second.url, `dh_shard1_${tag}`),
    ];
    storeSpec = urls.join(' ');
    store = await ShardedSessionStore.open(urls, { poolSize: 4 });
    connection = await Connection.connect({ address: testCluster.cluster.address });
    client = new Client({ connection, namespace: testCluster.cluster.namespace });
  }, 180_000);

  afterAll(async () => {
    await connection?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await testCluster?.dispose();
    await second?.stop().catch(() => undefined);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("sessions on the live shard go on; the killed shard's sessions wait and resume; nothing lost or twice", async ({
    onTestFinished,
  }) => {
    // Each session streams a ~5 s answer to its first message, so the kill lands mid-turn; then a quick echo.
    const replies: Script['replies'][number][] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const k = `k${i}`;
      replies.push(
        {
          match: { lastUserContains: `[${k}] t1` },
          text: `${k} answers slowly. `.repeat(10),
          chunkSize: 4,
          chunkDelayMs: 100,
          repeat: 3,
        },
        {
          match: { lastUserContains: `[${k}] t2` },
          toolCalls: [{ id: `${k}-echo`, name: 'echo', arguments: { text: k } }],
        },
        { match: { lastUserContains: `[${k}] t2` }, text: `${k}: after the outage.`, repeat: 3 },
      );
    }
    const trial = await startClusterTrial({
      name: 'shard-kill',
      script: { models: [TEST_MODEL], mode: 'match', replies },
      address: testCluster.cluster.address,
      namespace: testCluster.cluster.namespace,
      storeUrl: storeSpec,
      workflowBundlePath: inject('workflowBundlePath'),
      dir,
      client,
      store,
    });
    onTestFinished(() => trial.close());
    await Promise.all(HOSTS.map((h) => trial.fleet.start(h)));
    const all = Array.from({ length: SESSIONS }, (_, i) => trial.sessionId(`k${i}`));
    const onLive = all.filter((id) => store.shardOf(id) === 0);
    const onKilled = all.filter((id) => store.shardOf(id) === 1);
    expect(onLive.length).toBeGreaterThanOrEqual(2);
    expect(onKilled.length).toBeGreaterThanOrEqual(2);
    await Promise.all(
      all.map((id) =>
        trial.send(id, { kind: 'followup', messageId: `${tagOf(id)}-t1`, content: `[${tagOf(id)}] t1: go.` }, true),
      ),
    );
    // Every session has sent its first request (its turn is open) before the kill.
    await until(
      'every session streaming its first answer',
      () => Promise.all(all.map((id) => store.read(id).catch(() => [] as SessionEvent[]))),
      (logs) => logs.every((log) => ofType(log, 'request/sent').length > 0),
      60_000,
    );
    await second.kill?.();
    const killedAt = Date.now();
    // While shard 1 is down, every session on shard 0 ends its turn.
    const live = await until(
      'the sessions of the live shard ending their turn with the other shard down',
      () => Promise.all(onLive.map((id) => store.read(id))),
      (logs) => logs.every((log) => turnEnds(log).length === 1),
      60_000,
    );
    for (const log of live) expect(turnEnds(log)).toEqual(['1:completed']);
    await expect(store.head(onKilled[0] ?? '')).rejects.toThrow();
    console.log(
      `shard kill: the live shard's ${onLive.length} sessions ended their turn ${Date.now() - killedAt} ms after`,
    );
    await second.restart?.();

    const logs = await (async () => {
      await Promise.all(
        all.map((id) =>
          trial.send(id, { kind: 'followup', messageId: `${tagOf(id)}-t2`, content: `[${tagOf(id)}] t2: echo.` }),
        ),
      );
      return await untilAllSettled(trial, store, all, 120_000);
    })().catch(async (error: unknown) => {
      throw await diagnoseWith(client, error, all, trial.fleet.outputs());
    });
    for (const id of all) {
      const log = logs.get(id) ?? [];
      expect(turnEnds(log), id).toEqual(['1:completed', '2:completed']);
      expect(
        ofType(log, 'user/message').map((m) => m.messageId),
        id,
      ).toEqual([`${tagOf(id)}-t1`, `${tagOf(id)}-t2`]);
      const answer = ofType(log, 'assistant/message').find((m) => m.turn === 1);
      expect(answer?.content, id).toBe(`${tagOf(id)} answers slowly. `.repeat(10));
    }
    for (const check of await checkSessions(trial, store, client, all, tagOf)) {
      expect(check.problems, check.sessionId).toEqual([]);
      expect(check.counts, check.sessionId).toEqual(ZERO_COUNTS);
      expect(check.turnErrors, check.sessionId).toBe(0);
      expect(check.audited, check.sessionId).toBe(true);
    }
  }, 240_000);
});
