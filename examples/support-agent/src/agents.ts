// The agents of the support desk: `support` answers customers and may refund, `triage` sorts tickets. Both call
// the order system through tools made with defineTool; `dh worker --agents ./src/agents.ts` serves the default
// export, and the tests build the same agents over an order system of their own.
import { defineAgent, defineTool, type Agent } from 'durable-harness';
import { z } from 'zod';
import { memoryOrders, type Orders } from './orders.js';

const OrderId = z
  .string()
  .regex(/^\d{4,10}$/)
  .describe('The order number, digits only');

export function createAgents(orders: Orders): { support: Agent; triage: Agent } {
  const lookupOrder = defineTool({
    name: 'lookup_order',
    description: 'Look up an order by its number: status, items, total, and what was refunded so far.',
    parameters: z.object({ orderId: OrderId }),
    // A read: after a crash it simply runs again.
    idempotent: true,
    readOnly: true,
    concurrencySafe: true,
    async run({ orderId }) {
      const order = await orders.find(orderId);
      if (order === undefined) return { status: 'error', output: `There is no order ${orderId}.` };
      return JSON.stringify(order);
    },
  });

  const issueRefund = defineTool({
    name: 'issue_refund',
    description: 'Refund part or all of an order to the customer. Each call pays out: never repeat one.',
    parameters: z.object({
      orderId: OrderId,
      amountCents: z.number().int().positive().describe('How much to pay back, in cents'),
      reason: z.string().min(3).describe('Why, in a few words, for the customer record'),
    }),
    // Not idempotent (the default): a call a crash cut off is answered `interrupted`, never paid twice.
    concurrencySafe: true,
    async run({ orderId, amountCents, reason }) {
      const refund = await orders.refund(orderId, amountCents, reason);
      return `Refund ${refund.id} of ${refund.amountCents} cents on order ${refund.orderId} is on its way.`;
    },
  });

  const support = defineAgent({
    name: 'support',
    description: 'Answers customers about their orders and refunds what arrived broken',
    instructions:
      'You are the support desk of a small shop. Look orders up before you answer. Refund an item only when ' +
      'the customer says it arrived broken or never arrived, and say so plainly. Be brief and kind.',
    model: 'support-large',
    temperature: 0.2,
    tools: [lookupOrder, issueRefund],
    limits: { maxStepsPerTurn: 8 },
  });

  const triage = defineAgent({
    name: 'triage',
    description: 'Sorts an incoming ticket by urgency and topic',
    instructions:
      'You sort support tickets. Answer with one line: "urgency: low|normal|high; topic: <a word or two>". ' +
      'Look the order up when the ticket names one.',
    model: 'triage-small',
    temperature: 0,
    tools: [lookupOrder],
  });

  return { support, triage };
}

export const { support, triage } = createAgents(memoryOrders());

export default [support, triage];
