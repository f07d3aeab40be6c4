/**
 * `applications list|show|review|approve|reject`: staff's queue from the shell. The actions go through the
 * applications' own store, so they are the API's transactions (an approval places the order and holds the pet,
 * with its events), as `orders cancel` is. The history records them as made `by` "cli".
 */
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { accountRepository } from '../modules/accounts/index.js';
import {
  APPLICATION_ID,
  APPLICATION_STATUSES,
  applicationStore,
  REJECT_REASONS,
  renderApplication,
  type Action,
  type ApplicationStatus,
  type FullApplication,
  type Refusal,
} from '../modules/applications/index.js';
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

/** Who the history names for a move made here: no API key is involved. */
export const CLI_ACTOR = 'cli';
const PAGE = 500;

export const applicationsList: Command = {
  help: `Usage: pet-adoption applications list [--status S,…] [--pet ID] [--account NAME] [--newest] [--json]

Lists adoption applications of every account, oldest first (the queue): id, pet id, status, applicant id,
creation and update times. No personal data: "applications show ID" prints the applicant.

  --status S,…        only these statuses: ${APPLICATION_STATUSES.join(', ')}
  --pet ID            only applications for this pet
  --account NAME      only this account's applications
  --newest            newest first
  --json              print a JSON array of applications as the API shows them (with the applicants)`,
  run: list,
};

export const applicationsShow: Command = {
  help: `Usage: pet-adoption applications show ID [--json]

Prints application ID: the applicant, the answers, the status and its history. --json prints it as the API
shows it.`,
  run: show,
};

export const applicationsReview: Command = {
  help: `Usage: pet-adoption applications review ID

Takes submitted application ID into review (in_review). Prints the application as JSON.`,
  run: (config, args) => act(config, args, 'review'),
};

export const applicationsApprove: Command = {
  help: `Usage: pet-adoption applications approve ID

Approves application ID (in_review): in the same transaction a store order is placed for the application's
account and the pet is held for it (pending). The pet must be available. Prints the application as JSON.`,
  run: (config, args) => act(config, args, 'approve'),
};

export const applicationsReject: Command = {
  help: `Usage: pet-adoption applications reject ID --reason REASON [--note TEXT]

Rejects application ID (submitted, in_review or needs_info). Prints the application as JSON.

  --reason REASON     ${REJECT_REASONS.join(', ')}
  --note TEXT         a note kept in the history (at most 2,000 characters)`,
  run: (config, args) => act(config, args, 'reject'),
};

function statuses(value: string | undefined): ApplicationStatus[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((name) => name.trim());
  const unknown = names.find((name) => !(APPLICATION_STATUSES as readonly string[]).includes(name));
  if (unknown !== undefined || names.length > APPLICATION_STATUSES.length) {
    throw new UsageError(`--status takes a comma list of ${APPLICATION_STATUSES.join(', ')}`);
  }
  return [...new Set(names as ApplicationStatus[])];
}

function applicationId(positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new UsageError(`${command} needs exactly one application ID`);
  const id = positionals[0]!;
  if (!new RegExp(APPLICATION_ID).test(id)) {
    throw new UsageError(`ID must look like app_ followed by 20 hex digits, got "${id.slice(0, 40)}"`);
  }
  return id;
}

const view = ({ application, applicant }: FullApplication) => renderApplication(application, applicant);

async function list(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    {
      status: { type: 'string' },
      pet: { type: 'string' },
      account: { type: 'string' },
      newest: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    true,
  );
  noPositionals(positionals, 'applications list');
  const wanted = statuses(values.status);
  const petId = positiveInt(values.pet, '--pet');
  await withDatabase(config, async (database) => {
    let accountId: number | undefined;
    if (values.account !== undefined) {
      const account = await database.repository(accountRepository).findAccount(values.account);
      if (!account) throw new CommandFailed(`no account "${values.account}"`);
      accountId = account.id;
    }
    const store = database.repository(applicationStore);
    const all: FullApplication[] = [];
    for (let after: number | undefined; ;) {
      const page = await store.list({
        accountId,
        statuses: wanted,
        petId,
        sort: values.newest ? 'newest' : 'oldest',
        after,
        limit: PAGE,
      });
      all.push(...page);
      if (page.length < PAGE) break;
      after = page.at(-1)!.application.seq;
    }
    if (values.json) {
      print(JSON.stringify(all.map(view)));
      return;
    }
    if (all.length === 0) {
      print('No applications.');
      return;
    }
    print(
      ['id'.padEnd(24), '   petId', 'status    ', 'applicant'.padEnd(24), 'createdAt', 'updatedAt'].join(
        '  ',
      ),
    );
    for (const { application: a } of all) {
      const iso = (ms: number) => new Date(ms).toISOString();
      print(
        [
          a.id,
          String(a.petId).padStart(8),
          a.status.padEnd(10),
          a.applicantId,
          iso(a.createdAt),
          iso(a.updatedAt),
        ].join('  '),
      );
    }
  });
}

async function found(database: Database, id: string): Promise<FullApplication> {
  const application = await database.repository(applicationStore).get(id);
  if (!application) throw new CommandFailed(`no application ${id}`);
  return application;
}

async function show(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, true);
  const id = applicationId(positionals, 'applications show');
  await withDatabase(config, async (database) => {
    const a = view(await found(database, id));
    if (values.json) {
      print(JSON.stringify(a));
      return;
    }
    const person = a.applicant;
    const lines = [
      `${a.id}  pet ${a.petId}  ${a.status}${a.statusReason ? ` (${a.statusReason})` : ''}`,
      `applicant ${person.id}: ${person.name ?? '(erased)'}${person.email ? ` <${person.email}>` : ''}` +
        (person.phone ? `, ${person.phone}` : ''),
    ];
    if (person.address) {
      const { line1, postcode, city, country } = person.address;
      lines.push(`  ${line1}, ${postcode} ${city}, ${country}`);
    }
    if (a.orderId !== undefined) lines.push(`order ${a.orderId}`);
    if (a.message) lines.push(`asked: ${a.message}`);
    lines.push(`answers (form version ${a.formVersion}):`);
    for (const [question, answer] of Object.entries(a.answers))
      lines.push(`  ${question}: ${String(answer)}`);
    lines.push('history:');
    for (const step of a.history) {
      const why = [step.reason, step.note].filter(Boolean).join(': ');
      lines.push(
        `  ${step.at}  ${step.status.padEnd(10)}  ${step.by ?? 'automatic'}${why ? `  ${why}` : ''}`,
      );
    }
    print(lines.join('\n'));
  });
}

const VERB: Record<Action, string> = {
  review: 'taken into review',
  approve: 'approved',
  reject: 'rejected',
  'request-info': 'asked for information',
  withdraw: 'withdrawn',
};

function failure(id: string, action: Action, refusal: Refusal): CommandFailed {
  switch (refusal.kind) {
    case 'not_found':
      return new CommandFailed(`no application ${id}`);
    case 'invalid_transition':
      return new CommandFailed(`application ${id} is ${refusal.status}; it cannot be ${VERB[action]}`);
    case 'pet_not_available':
      return new CommandFailed(`application ${id} cannot be approved: its pet is not available`);
    default:
      return new CommandFailed(`application ${id} could not be ${VERB[action]} (${refusal.kind})`);
  }
}

async function act(config: Config, args: string[], action: 'review' | 'approve' | 'reject'): Promise<void> {
  const options: Parameters<typeof parse>[1] =
    action === 'reject' ? { reason: { type: 'string' }, note: { type: 'string' } } : {};
  const { values, positionals } = parse(args, options, true);
  const id = applicationId(positionals, `applications ${action}`);
  const { reason, note } = values as { reason?: string; note?: string };
  if (action === 'reject') {
    if (reason === undefined || !(REJECT_REASONS as readonly string[]).includes(reason)) {
      throw new UsageError(`reject needs --reason, one of ${REJECT_REASONS.join(', ')}`);
    }
    if (note !== undefined && (note.length === 0 || note.length > 2000)) {
      throw new UsageError('--note must be 1 to 2,000 characters');
    }
  }
  await withDatabase(config, async (database) => {
    const result = await database.repository(applicationStore).act({
      id,
      request: {
        action,
        actor: { keyId: CLI_ACTOR, accountId: 0, manager: true },
        reason,
        note,
        now: Date.now(),
      },
    });
    if (result.kind === 'done') {
      print(JSON.stringify(view(result.application)));
      return;
    }
    if (result.kind === 'replayed' || result.kind.startsWith('idempotency_')) {
      throw new CommandFailed(`application ${id} could not be ${VERB[action]} (${result.kind})`);
    }
    throw failure(id, action, result as Refusal);
  });
}
