#!/usr/bin/env node
/**
 * `pet-adoption`: the service's command line, one file per command in src/cli/. Same environment as the server. Results go to stdout
 * (a new key alone on the last line), errors to stderr with a non-zero exit code.
 */
import { accountsUnban } from './cli/accounts.js';
import { UsageError, print } from './cli/common.js';
import { keysCreate, keysList, keysRevoke } from './cli/keys.js';
import { migrate } from './cli/migrate.js';
import { ordersCancel, ordersList } from './cli/orders.js';
import { seed } from './cli/seed.js';
import { serveCommand } from './cli/serve.js';
import { webhooksDeliveries, webhooksList } from './cli/webhooks.js';
import { ConfigError, loadConfig } from './config.js';
import { StorageUnavailableError } from './db/database.js';

const USAGE = `Usage: pet-adoption <command>

  serve                                   run the HTTP service (what npm start runs)
  migrate                                 apply database migrations
  seed --pets N                           add N demo pets
  keys create --account NAME [--plan free|pro|business|enterprise]
              [--per-minute N] [--per-day N] [--expires ISO-8601]
              [--scopes SCOPE,…] [--json]
                                          create a key (and the account on first use);
                                          without --scopes it has every scope
  keys list [--account NAME] [--json]     list keys (never their secrets)
  keys revoke KEY_ID                      revoke a key; effective on the next request
  accounts unban NAME                     lift a temporary ban at once
  orders list [--account NAME] [--status S] [--json]
                                          list store orders (every account's)
  orders cancel ID                        cancel an open order; its pet becomes available again
  webhooks list [--account NAME] [--json] list webhook endpoints (never their secrets)
  webhooks deliveries ENDPOINT_ID [--json]
                                          an endpoint's deliveries: status, attempts, last answer

Configuration comes from the environment: DATABASE_URL, REDIS_URL, PORT, HOST, LOG_LEVEL, … (see README).`;

/** StorageUnavailableError's own message says only "storage unavailable"; the cause says why. */
function describeError(error: unknown): string {
  if (error instanceof StorageUnavailableError) return `database unavailable: ${causeText(error.cause)}`;
  return error instanceof Error ? error.message : String(error);
}

function causeText(cause: unknown): string {
  // Node's happy-eyeballs connect reports every address it tried in an AggregateError with no message.
  if (cause instanceof AggregateError && cause.errors.length > 0) {
    return cause.errors.map(causeText).join('; ');
  }
  if (cause instanceof Error) return cause.message || cause.name;
  return String(cause);
}

export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      print(USAGE);
      return command === undefined ? 1 : 0;
    }
    const config = loadConfig();
    switch (command) {
      case 'serve':
        await serveCommand(config);
        return 0;
      case 'migrate':
        await migrate(config);
        return 0;
      case 'seed':
        await seed(
          config,
          [sub, ...rest].filter((a): a is string => a !== undefined),
        );
        return 0;
      case 'keys':
        if (sub === 'create') await keysCreate(config, rest);
        else if (sub === 'list') await keysList(config, rest);
        else if (sub === 'revoke') await keysRevoke(config, rest);
        else throw new UsageError('keys takes create, list or revoke');
        return 0;
      case 'accounts':
        if (sub === 'unban') await accountsUnban(config, rest);
        else throw new UsageError('accounts takes unban');
        return 0;
      case 'orders':
        if (sub === 'list') await ordersList(config, rest);
        else if (sub === 'cancel') await ordersCancel(config, rest);
        else throw new UsageError('orders takes list or cancel');
        return 0;
      case 'webhooks':
        if (sub === 'list') await webhooksList(config, rest);
        else if (sub === 'deliveries') await webhooksDeliveries(config, rest);
        else throw new UsageError('webhooks takes list or deliveries');
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`pet-adoption: invalid configuration: ${error.message}\n`);
      return 2;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`pet-adoption: ${(error as Error).message}\n\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`pet-adoption: ${describeError(error)}\n`);
    return 1;
  }
}

const exitCode = await main(process.argv.slice(2));
// On success `serve` keeps running and the other commands end by themselves; a failure may leave pools open.
if (exitCode !== 0) process.exit(exitCode);
