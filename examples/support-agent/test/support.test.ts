// The support desk on the testing kit: a Temporal server, the scripted provider and a worker, started by the
// test. Two agents share one worker and each session's requests are its own agent's; a worker killed in the
// middle of two tool calls runs the lookup again after its restart, never the refund, and the log audits clean.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestHarness, type TestHarness } from 'durable-harness/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { support, triage } from '../src/agents.js';
import { SupportDesk } from '../src/service.js';

const START_MS = 300_000;

describe('two agents on one worker', () => {
  let h: TestHarness;

  beforeAll(async () => {
    h = await startTestHarness({
      agents: [support, triage],
      script: {
        mode: 'match',
        replies: [
          // Slow, so the colleague's note arrives while the first step runs and lands in the next one.
          {
            match: { lastUserContains: 'Where is order 1042' },
            delayMs: 1500,
            toolCalls: [{ id: 'call_lookup', name: 'lookup_order', arguments: { orderId: '1042' } }],
          },
          { match: { lastUserContains: 'VIP' }, text: 'Order 1042 was delivered on Monday. Anything else?' },
          { match: { lastUserContains: 'never arrived' }, text: 'urgency: high; topic: delivery' },
        ],
      },
    });
  }, START_MS);

  afterAll(() => h?.close());

  it("sends each session's requests with its own agent's instructions, model and tools", async () => {
    const desk = new SupportDesk(h.client);
    const answered = desk.answer('1042', 'Where is order 1042?');
    await h.waitForLog(SupportDesk.sessionOf('1042'), (events) => events.some((e) => e.type === 'request/sent'));
    await desk.note('1042', 'The customer is a VIP.');
    const [answer, sorted] = await Promise.all([answered, desk.triage('77', 'My kettle never arrived (1077).')]);
    expect(answer.reason).toBe('completed');
    expect(sorted.reason).toBe('completed');

    const requests = h.provider.chatRequests();
    const bySupport = requests.filter((request) => request.model === 'support-large');
    const byTriage = requests.filter((request) => request.model === 'triage-small');
    expect(bySupport.length + byTriage.length).toBe(requests.length);
    expect(bySupport).toHaveLength(2);
    expect(byTriage).toHaveLength(1);
    for (const request of bySupport) {
      expect(request.system).toContain(support.instructions);
      expect(request.tools).toEqual(['lookup_order', 'issue_refund']);
    }
    expect(bySupport[1]?.lastUser).toContain('VIP');
    expect(byTriage[0]?.system).toContain(triage.instructions);
    expect(byTriage[0]?.tools).toEqual(['lookup_order']);

    const audit = await h.audit(SupportDesk.sessionOf('1042'));
    expect(audit.failures).toEqual([]);
  }, 120_000);
});

describe('a worker killed mid-tool', () => {
  let h: TestHarness;
  const gate = mkdtempSync(join(tmpdir(), 'support-gate-'));
  const runs = (call: 'find' | 'refund') =>
    readFileSync(join(gate, `${call}.runs`), { encoding: 'utf8', flag: 'a+' })
      .split('\n')
      .filter(Boolean);

  beforeAll(async () => {
    h = await startTestHarness({
      agents: [support, triage],
      // A child process, `dh worker --agents test/gated-agents.ts`: the test can kill it like a crash.
      worker: { module: new URL('./gated-agents.ts', import.meta.url) },
      env: { SUPPORT_GATE_DIR: gate },
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'arrived broken' },
            toolCalls: [
              { id: 'call_lookup', name: 'lookup_order', arguments: { orderId: '1042' } },
              {
                id: 'call_refund',
                name: 'issue_refund',
                arguments: { orderId: '1042', amountCents: 2499, reason: 'arrived broken' },
              },
            ],
          },
          {
            match: { lastUserContains: 'arrived broken' },
            text: 'I could not confirm the refund went through; a colleague will check it today.',
          },
        ],
      },
    });
  }, START_MS);

  afterAll(async () => {
    await h?.close();
    rmSync(gate, { recursive: true, force: true });
  });

  it('runs the lookup again, answers the refund `interrupted`, and audits clean', async () => {
    const sessionId = 'ticket-crash';
    const receipt = await h.client.send(
      sessionId,
      { content: 'Order 1042 arrived broken, please refund it.', target: 'next-turn', wakeup: true },
      { start: true, agent: 'support' },
    );
    // Both calls are logged as started, then inside the order system, waiting at the gate.
    await h.waitForLog(sessionId, (events) => events.filter((event) => event.type === 'tool/start').length === 2);
    for (const deadline = Date.now() + 30_000; runs('find').length < 1 || runs('refund').length < 1; await sleep(50)) {
      if (Date.now() > deadline) throw new Error(`the tools never reached the gate; see ${h.worker.logFile}`);
    }
    await h.worker.kill();
    writeFileSync(join(gate, 'open'), '');
    await h.worker.restart();

    // The tool step is retried once its heartbeat times out (10 s).
    const end = await receipt.turnEnded({ timeoutMs: 120_000 });
    expect(end.reason).toBe('completed');
    expect(runs('find')).toHaveLength(2);
    expect(runs('refund')).toHaveLength(1);
    const results = (await h.log(sessionId)).flatMap((event) =>
      event.type === 'tool/result' ? [[event.name, event.status]] : [],
    );
    expect(results).toEqual([
      ['lookup_order', 'ok'],
      ['issue_refund', 'interrupted'],
    ]);
    const audit = await h.audit(sessionId);
    expect(audit.failures).toEqual([]);
    expect(audit.ok).toBe(true);
  }, 180_000);
});
