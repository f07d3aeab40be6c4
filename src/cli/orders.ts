/** `orders list` and `orders cancel`: what an operator needs to see and fix store orders from the shell. */
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { orderRepository, type OrderRecord } from '../modules/orders/repository.js';
import { ORDER_STATUSES, type OrderStatus } from '../modules/orders/schemas.js';
import { renderOrder } from '../modules/orders/routes.js';
import { positiveInt, print, UsageError, withDatabase } from './common.js';

/** A refusal that is not a usage mistake (unknown order, final status): stderr, exit 1. */
export class CommandFailed extends Error {}

function line(order: OrderRecord): string {
  const o = renderOrder(order, true);
  return [
    String(o.id).padStart(6),
    String(o.petId).padStart(8),
    o.status.padEnd(10),
    o.account,
    o.createdAt,
    o.updatedAt,
  ].join('  ');
}

export async function ordersList(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { account: { type: 'string' }, status: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (positionals.length > 0) throw new UsageError(`orders list takes no argument "${positionals[0]}"`);
  const status = values.status as OrderStatus | undefined;
  if (status !== undefined && !ORDER_STATUSES.includes(status)) {
    throw new UsageError(`--status must be one of ${ORDER_STATUSES.join(', ')}`);
  }
  await withDatabase(config, async (database) => {
    const orders = database.repository(orderRepository);
    const all: OrderRecord[] = [];
    for (let afterId = 0; ;) {
      const page = await orders.list({ accountName: values.account, status, afterId, limit: 1000 });
      all.push(...page);
      if (page.length < 1000) break;
      afterId = page.at(-1)!.id;
    }
    if (values.json) {
      print(JSON.stringify(all.map((o) => renderOrder(o, true))));
      return;
    }
    if (all.length === 0) {
      print('No orders.');
      return;
    }
    print(['    id', '   petId', 'status    ', 'account', 'createdAt', 'updatedAt'].join('  '));
    for (const order of all) print(line(order));
  });
}

export async function ordersCancel(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UsageError('orders cancel needs exactly one order ID');
  const id = positiveInt(positionals[0], 'ID')!;
  await withDatabase(config, async (database) => {
    // The API's transaction: the order and its pet move together, or neither does.
    const result = await database
      .repository(orderRepository)
      .transition({ id, action: 'cancel', now: Date.now() });
    switch (result.kind) {
      case 'done':
        print(JSON.stringify(renderOrder(result.order, true)));
        return;
      case 'not_found':
        throw new CommandFailed(`no order ${id}`);
      case 'invalid_transition':
        throw new CommandFailed(`order ${id} is ${result.status}; it cannot be cancelled`);
      default:
        throw new CommandFailed(`order ${id} could not be cancelled (${result.kind})`);
    }
  });
}
