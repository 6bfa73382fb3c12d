// The support agents over an order system whose every call waits at a gate: it notes in SUPPORT_GATE_DIR that
// it started (one line per run), then waits until the test opens the gate (the file `open` there). The crash
// test's worker serves these (`dh worker --agents test/gated-agents.ts`), so it can be killed mid-tool.
import { appendFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAgents } from '../src/agents.js';
import { memoryOrders, type Orders } from '../src/orders.js';

const dir = process.env.SUPPORT_GATE_DIR;
if (dir === undefined) throw new Error('gated-agents.ts: set SUPPORT_GATE_DIR to the gate directory');

async function pass(gate: string, call: 'find' | 'refund'): Promise<void> {
  appendFileSync(join(gate, `${call}.runs`), `${process.pid}\n`);
  while (!existsSync(join(gate, 'open'))) await sleep(50);
}

function gated(orders: Orders, gate: string): Orders {
  return {
    find: async (orderId) => {
      await pass(gate, 'find');
      return orders.find(orderId);
    },
    refund: async (orderId, amountCents, reason) => {
      await pass(gate, 'refund');
      return orders.refund(orderId, amountCents, reason);
    },
  };
}

const { support, triage } = createAgents(gated(memoryOrders(), dir));

export default [support, triage];
