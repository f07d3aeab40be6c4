#!/usr/bin/env node
/**
 * `pet-adoption`: the service's command line, one file per command in src/cli/. Same environment as the server. Results go to stdout
 * (a new key alone on the last line), errors to stderr with a non-zero exit code: 2 for a mistake in the
 * command line or the configuration, 1 when the command could not do its work. `--help` (or `-h`) on any
 * command or subcommand prints its help on stdout.
 */
import { accountsUnban } from './cli/accounts.js';
import {
  applicationsApprove,
  applicationsList,
  applicationsReject,
  applicationsReview,
  applicationsShow,
} from './cli/applications.js';
import { CommandFailed, UsageError, print, type Command } from './cli/common.js';
import { keysCreate, keysList, keysRevoke } from './cli/keys.js';
import { migrateCommand } from './cli/migrate.js';
import { ordersCancel, ordersList } from './cli/orders.js';
import { seedCommand } from './cli/seed.js';
import { serveCommand } from './cli/serve.js';
import { webhooksDeliveries, webhooksList } from './cli/webhooks.js';
import { loadConfig } from './config.js';
import { ConfigError } from './config-parsers.js';
import { StorageUnavailableError } from './db/database.js';
import { SERVICE_VERSION } from './version.js';

export const USAGE = `Usage: pet-adoption <command> [options]

  serve                                   run the HTTP service (what npm start runs)
  migrate                                 create the database or apply pending migrations
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
  applications list [--status S,…] [--pet ID] [--account NAME] [--newest] [--json]
                                          adoption applications of every account, the queue
  applications show ID [--json]           one application: the applicant, answers, history
  applications review|approve ID          take into review; approve (places the order)
  applications reject ID --reason R [--note TEXT]
                                          reject (unsuitable, incomplete, duplicate, other)
  webhooks list [--account NAME] [--json] list webhook endpoints (never their secrets)
  webhooks deliveries ENDPOINT_ID [--json]
                                          an endpoint's deliveries: status, attempts, last answer

  pet-adoption <command> --help           a command's options
  pet-adoption --version                  the version

Only serve and migrate create a database; the other commands work on an existing one.
Configuration comes from the environment: DATABASE_URL, REDIS_URL, PORT, HOST, LOG_LEVEL, … (see docs/operations.md).`;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  migrate: migrateCommand,
  seed: seedCommand,
};

interface Group {
  help: string;
  subcommands: Record<string, Command>;
}

function group(name: string, summary: string, subcommands: Record<string, Command>): Group {
  const names = Object.keys(subcommands);
  const lines = names.map((sub) => `  ${subcommands[sub]!.help.split('\n')[0]!.replace(/^Usage: /, '')}`);
  return {
    help: `Usage: pet-adoption ${name} <${names.join('|')}> [options]\n\n${summary}\n\n${lines.join('\n')}\n\nRun "pet-adoption ${name} <subcommand> --help" for its options.`,
    subcommands,
  };
}

const GROUPS: Record<string, Group> = {
  keys: group('keys', 'API keys: create, list and revoke them.', {
    create: keysCreate,
    list: keysList,
    revoke: keysRevoke,
  }),
  accounts: group('accounts', 'Accounts: lift a ban.', { unban: accountsUnban }),
  orders: group('orders', 'Store orders of every account.', { list: ordersList, cancel: ordersCancel }),
  applications: group(
    'applications',
    'Adoption applications of every account: the queue and its decisions.',
    {
      list: applicationsList,
      show: applicationsShow,
      review: applicationsReview,
      approve: applicationsApprove,
      reject: applicationsReject,
    },
  ),
  webhooks: group('webhooks', 'Webhook endpoints and their deliveries.', {
    list: webhooksList,
    deliveries: webhooksDeliveries,
  }),
};

/** `--help` or `-h` anywhere before a `--`. */
function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

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

/** parseArgs' messages go on to explain `--` escaping; the first sentence is what the user needs. */
function parseArgsMessage(error: Error): string {
  const first = error.message.split(/\.\s/)[0]!;
  return first.charAt(0).toLowerCase() + first.slice(1);
}

function usageFailure(message: string, help: string): number {
  process.stderr.write(`pet-adoption: ${message}\n\n${help}\n`);
  return 2;
}

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) return usageFailure('a command is needed', USAGE);
  if (first === '--help' || first === '-h' || first === 'help') {
    // `help keys` is `keys --help`.
    const topic = rest[0] === undefined ? undefined : (GROUPS[rest[0]] ?? COMMANDS[rest[0]]);
    print(topic?.help ?? USAGE);
    return 0;
  }
  if (first === '--version' || first === '-v') {
    print(SERVICE_VERSION);
    return 0;
  }

  let command: Command;
  let args: string[];
  const leaf = COMMANDS[first];
  const grouped = GROUPS[first];
  if (leaf) {
    command = leaf;
    args = rest;
  } else if (grouped) {
    const [sub, ...subArgs] = rest;
    const names = Object.keys(grouped.subcommands);
    if (sub === '--help' || sub === '-h') {
      print(grouped.help);
      return 0;
    }
    if (sub === undefined)
      return usageFailure(`${first} needs a subcommand: ${names.join(', ')}`, grouped.help);
    const found = grouped.subcommands[sub];
    if (!found)
      return usageFailure(`unknown ${first} subcommand "${sub}"; use ${names.join(', ')}`, grouped.help);
    command = found;
    args = subArgs;
  } else if (first.startsWith('-')) {
    return usageFailure(`unknown option "${first}"`, USAGE);
  } else {
    return usageFailure(`unknown command "${first}"`, USAGE);
  }
  if (wantsHelp(args)) {
    print(command.help);
    return 0;
  }

  try {
    await command.run(loadConfig(), args);
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`pet-adoption: invalid configuration: ${error.message}\n`);
      return 2;
    }
    if (error instanceof UsageError) return usageFailure(error.message, command.help);
    if (error instanceof Error && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      return usageFailure(parseArgsMessage(error), command.help);
    }
    if (error instanceof CommandFailed) {
      process.stderr.write(`pet-adoption: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`pet-adoption: ${describeError(error)}\n`);
    return 1;
  }
}

const exitCode = await main(process.argv.slice(2));
// On success `serve` keeps running and the other commands end by themselves; a failure may leave pools open.
if (exitCode !== 0) process.exit(exitCode);
