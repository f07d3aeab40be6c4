/** `orders list` and `orders cancel`: what an operator needs to see and fix store orders from the shell. */
import type { Config } from '../config.js';
import { orderRepository, type OrderRecord } from '../modules/orders/index.js';
import { ORDER_STATUSES, type OrderStatus } from '../modules/orders/index.js';
import { renderOrder } from '../modules/orders/index.js';
import {
  CommandFailed,
  noPositionals,
  parse,
  positiveInt,
  print,
  UsageError,
  withDatabase,
  type Command,
} from './common.js';

export const ordersList: Command = {
  help: `Usage: pet-adoption orders list [--account NAME] [--status STATUS] [--json]

Lists store orders of every account: id, pet id, status, account, creation and update times.

  --account NAME      only this account's orders
  --status STATUS     only orders in this status: ${ORDER_STATUSES.join(', ')}
  --json              print a JSON array of orders as the API shows them`,
  run: list,
};

export const ordersCancel: Command = {
  help: `Usage: pet-adoption orders cancel ID

Cancels open order ID (placed or approved); its pet becomes available again. Prints the order as JSON.`,
  run: cancel,
};

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

async function list(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    { account: { type: 'string' }, status: { type: 'string' }, json: { type: 'boolean' } },
    true,
  );
  noPositionals(positionals, 'orders list');
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

async function cancel(config: Config, args: string[]): Promise<void> {
  const { positionals } = parse(args, {}, true);
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
