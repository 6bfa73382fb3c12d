// The order system the support agents work on: the interface their tools call (your backend implements it)
// and an in-memory one with a few orders, for a worker on your machine and for the tests.

export interface OrderItem {
  readonly sku: string;
  readonly name: string;
  readonly priceCents: number;
  readonly quantity: number;
}

export interface Order {
  readonly id: string;
  readonly customer: string;
  readonly status: 'processing' | 'shipped' | 'delivered';
  readonly items: readonly OrderItem[];
  readonly totalCents: number;
  readonly refundedCents: number;
}

export interface Refund {
  readonly id: string;
  readonly orderId: string;
  readonly amountCents: number;
  readonly reason: string;
}

export interface Orders {
  find(orderId: string): Promise<Order | undefined>;
  /** Pays money back: not safe to repeat (a second call is a second refund). */
  refund(orderId: string, amountCents: number, reason: string): Promise<Refund>;
}

const SAMPLE: readonly Order[] = [
  {
    id: '1042',
    customer: 'Ada',
    status: 'delivered',
    items: [{ sku: 'MUG-01', name: 'Enamel mug', priceCents: 2499, quantity: 1 }],
    totalCents: 2499,
    refundedCents: 0,
  },
  {
    id: '1077',
    customer: 'Grace',
    status: 'shipped',
    items: [{ sku: 'KETTLE-2', name: 'Stovetop kettle', priceCents: 5900, quantity: 1 }],
    totalCents: 5900,
    refundedCents: 0,
  },
];

export function memoryOrders(orders: readonly Order[] = SAMPLE): Orders {
  const byId = new Map(orders.map((order) => [order.id, order]));
  let refunds = 0;
  return {
    find: (orderId) => Promise.resolve(byId.get(orderId)),
    refund: (orderId, amountCents, reason) => {
      const order = byId.get(orderId);
      if (order === undefined) return Promise.reject(new Error(`no order ${orderId}`));
      const left = order.totalCents - order.refundedCents;
      if (amountCents > left) {
        return Promise.reject(new Error(`order ${orderId} has ${left} cents left to refund, not ${amountCents}`));
      }
      byId.set(orderId, { ...order, refundedCents: order.refundedCents + amountCents });
      return Promise.resolve({ id: `refund-${++refunds}`, orderId, amountCents, reason });
    },
  };
}
