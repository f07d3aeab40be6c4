/** `webhooks list` and `webhooks deliveries ID`: what an operator needs to see of webhook delivery. */
import type { Config } from '../config.js';
import { accountRepository } from '../modules/accounts/index.js';
import { webhookRepository, type DeliveryRecord, type EndpointRecord } from '../modules/webhooks/index.js';
import { renderDelivery, renderEndpoint } from '../modules/webhooks/index.js';
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

export const webhooksList: Command = {
  help: `Usage: pet-adoption webhooks list [--account NAME] [--json]

Lists webhook endpoints (never their secrets): id, account id, enabled (or why not), events, URL.

  --account NAME      only this account's endpoints
  --json              print a JSON array`,
  run: list,
};

export const webhooksDeliveries: Command = {
  help: `Usage: pet-adoption webhooks deliveries ENDPOINT_ID [--json]

Lists an endpoint's deliveries: status, attempts, the last answer (HTTP status or error), the next
attempt and the event.

  --json              print a JSON array`,
  run: deliveries,
};

const PAGE = 1000;

async function list(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    { account: { type: 'string' }, json: { type: 'boolean' } },
    true,
  );
  noPositionals(positionals, 'webhooks list');
  await withDatabase(config, async (database) => {
    let accountId: number | undefined;
    if (values.account !== undefined) {
      const account = await database.repository(accountRepository).findAccount(values.account);
      if (!account) throw new CommandFailed(`no account named "${values.account}"`);
      accountId = account.id;
    }
    const repo = database.repository(webhookRepository);
    const all: EndpointRecord[] = [];
    for (let afterId = 0; ;) {
      const page = await repo.listEndpoints({ accountId, afterId, limit: PAGE });
      all.push(...page);
      if (page.length < PAGE) break;
      afterId = page.at(-1)!.id;
    }
    const live = new Map<number, Awaited<ReturnType<typeof repo.liveScopes>>>();
    for (const id of new Set(all.map((e) => e.accountId)))
      live.set(id, await repo.liveScopes(id, Date.now()));
    // Secrets never leave the database through the CLI either.
    const shown = all.map((e) => ({ ...renderEndpoint(e, live.get(e.accountId)!), accountId: e.accountId }));
    if (values.json) {
      print(JSON.stringify(shown));
      return;
    }
    if (shown.length === 0) {
      print('No webhook endpoints.');
      return;
    }
    print(['    id', 'account', 'enabled', 'events', 'url'].join('  '));
    for (const e of shown) {
      const state = e.enabled ? 'yes' : `no (${e.disabledReason ?? 'disabled'})`;
      print(
        [String(e.id).padStart(6), String(e.accountId).padStart(7), state, e.events.join(','), e.url].join(
          '  ',
        ),
      );
    }
  });
}

async function deliveries(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, true);
  if (positionals.length !== 1) throw new UsageError('webhooks deliveries needs exactly one ENDPOINT_ID');
  const endpointId = positiveInt(positionals[0], 'ENDPOINT_ID')!;
  await withDatabase(config, async (database) => {
    const repo = database.repository(webhookRepository);
    if (!(await repo.getEndpoint(undefined, endpointId)))
      throw new CommandFailed(`no webhook endpoint ${endpointId}`);
    const all: DeliveryRecord[] = [];
    for (let afterId = 0; ;) {
      const page = await repo.listDeliveries({ endpointId, afterId, limit: PAGE });
      all.push(...page);
      if (page.length < PAGE) break;
      afterId = page.at(-1)!.id;
    }
    const shown = all.map(renderDelivery);
    if (values.json) {
      print(JSON.stringify(shown));
      return;
    }
    if (shown.length === 0) {
      print('No deliveries.');
      return;
    }
    print(['    id', 'status   ', 'attempts', 'last', 'next attempt', 'event'].join('  '));
    for (const d of shown) {
      const last = d.lastStatusCode === null ? (d.lastError ?? '-') : String(d.lastStatusCode);
      print(
        [
          String(d.id).padStart(6),
          d.status.padEnd(9),
          String(d.attempts).padStart(8),
          last,
          d.nextAttemptAt ?? '-',
          `${d.eventType} ${d.eventId}`,
        ].join('  '),
      );
    }
  });
}
