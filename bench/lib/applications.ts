/**
 * A service of its own for the applications scenarios: a fresh database (SQLite file, or a PostgreSQL schema
 * with a Redis prefix), demo pets seeded through the CLI, then applications written straight into the tables
 * in bulk (100,000 submissions through HTTP would take minutes and measure nothing these rows judge): a
 * staff queue of mixed statuses, and applications `in_review` each on its own available pet, spread over many
 * accounts, for the approvals. Rows as the store writes them: one applicant each, the history of every move,
 * answers to the current form.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate, type Server } from '../../support/processes.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/index.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { FreshRequests, type Load } from './load.js';
import type { Context } from './scenario.js';
import { createKey, logFile, seed, trimLog } from './service.js';

type Backend = 'sqlite' | 'postgres';

const STAFF_ACCOUNT = 'bench-applications';

export interface ApplicationsSetup {
  /** Demo pets seeded (half of them `available`: available, available, pending, sold, …). */
  pets: number;
  /** Applications in the staff's queue, of mixed statuses (QUEUE_CYCLE), on the key's account. */
  queue?: number;
  /** Applications `in_review`, each on its own available pet, spread over APPROVAL_ACCOUNTS accounts. */
  approvable?: number;
}

export interface ApplicationsService {
  server: Server;
  /** Every scope (applications:manage included): staff. */
  auth: { authorization: string };
  /** New applications, each from a new applicant (email), on the available pets in turn. */
  submissions: FreshRequests;
  /** Approvals of the seeded `in_review` applications, each once. */
  approvals: FreshRequests;
  cleanup(): Promise<void>;
}

/** Queue statuses, one cycle of 20: a quarter `submitted` (the staff's queue), most of the rest closed. */
const QUEUE_CYCLE = [
  ...Array<string>(5).fill('submitted'),
  ...Array<string>(2).fill('in_review'),
  'needs_info',
  ...Array<string>(7).fill('rejected'),
  ...Array<string>(5).fill('withdrawn'),
];

/**
 * Accounts the approvable applications belong to: an approval places an order for the application's account
 * and counts that account's open orders under its lock, so approvals on one account would be serialised and
 * count ever more orders; real applications come from many.
 */
export const APPROVAL_ACCOUNTS = 500;

/** Ids 1..pets in seeding order; the k-th available demo pet (0-based): index i with i % 4 in {0, 1}. */
const availablePet = (k: number): number => Math.floor(k / 2) * 4 + (k % 2) + 1;

export const ANSWERS = { household: 'two adults', home: 'house with garden', 'other-pets': false };

interface SeedRow {
  applicantId: string;
  applicationId: string;
  accountId: number;
  email: string;
  petId: number;
  status: string;
  statusReason: string | null;
  message: string | null;
  history: string;
  version: number;
  at: number;
}

const hexId = (prefix: string, n: number): string => `${prefix}_${n.toString(16).padStart(20, '0')}`;

/** The moves that reach `status` from `submitted`, as the history records them. */
function historyOf(status: string, at: number): { history: string; version: number; reason: string | null } {
  const path: Record<string, string[]> = {
    submitted: ['submitted'],
    in_review: ['submitted', 'in_review'],
    needs_info: ['submitted', 'in_review', 'needs_info'],
    rejected: ['submitted', 'in_review', 'rejected'],
    withdrawn: ['submitted', 'withdrawn'],
  };
  const reason = status === 'rejected' ? 'unsuitable' : null;
  const steps = path[status]!;
  const when = new Date(at).toISOString();
  const entries = steps.map((s, i) => ({
    status: s,
    at: when,
    by: null,
    ...(reason && i === steps.length - 1 ? { reason } : {}),
  }));
  return { history: JSON.stringify(entries), version: steps.length, reason };
}

function seedRows(
  count: number,
  idOffset: number,
  now: number,
  row: (i: number) => { accountId: number; petId: number; status: string },
): SeedRow[] {
  return Array.from({ length: count }, (_, i) => {
    const { accountId, petId, status } = row(i);
    const at = now - (count - i) * 1000;
    const { history, version, reason } = historyOf(status, at);
    return {
      applicantId: hexId('apl', idOffset + i),
      applicationId: hexId('app', idOffset + i),
      accountId,
      email: `bench-applicant-${idOffset + i}@example.com`,
      petId,
      status,
      statusReason: reason,
      message: status === 'needs_info' ? 'Please tell us about your garden.' : null,
      history,
      version,
      at,
    };
  });
}

const ANSWERS_JSON = JSON.stringify(ANSWERS);

function insertSqlite(path: string, rows: SeedRow[]): void {
  const db = new Database(path);
  try {
    const applicant = db.prepare(
      `INSERT INTO applicants (id, account_id, email_key, name, email, consent_at, created_at, updated_at)
       VALUES (?, ?, ?, 'Bench Applicant', ?, ?, ?, ?)`,
    );
    const application = db.prepare(
      `INSERT INTO applications (id, account_id, applicant_seq, pet_id, answers, form_version, status,
         status_reason, message, history, version, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      for (const r of rows) {
        const seq = applicant.run(
          r.applicantId,
          r.accountId,
          r.email,
          r.email,
          r.at,
          r.at,
          r.at,
        ).lastInsertRowid;
        application.run(
          ...[r.applicationId, r.accountId, seq, r.petId, ANSWERS_JSON, r.status, r.statusReason],
          ...[r.message, r.history, r.version, r.at, r.at],
        );
      }
    })();
  } finally {
    db.close();
  }
}

async function insertPostgres(schema: string, rows: SeedRow[]): Promise<void> {
  const { withPostgresClient } = await import('../../support/postgres.js');
  await withPostgresClient(async (client) => {
    await client.query(`SET search_path TO "${schema}"`);
    for (let start = 0; start < rows.length; start += 10_000) {
      const batch = rows.slice(start, start + 10_000);
      const col = <K extends keyof SeedRow>(k: K): SeedRow[K][] => batch.map((r) => r[k]);
      await client.query(
        `INSERT INTO applicants (id, account_id, email_key, name, email, consent_at, created_at, updated_at)
         SELECT u.id, u.account_id, u.email, 'Bench Applicant', u.email, u.at, u.at, u.at
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) AS u(id, account_id, email, at)`,
        [col('applicantId'), col('accountId'), col('email'), col('at')],
      );
      await client.query(
        `INSERT INTO applications (id, account_id, applicant_seq, pet_id, answers, form_version, status,
           status_reason, message, history, version, created_at, updated_at)
         SELECT u.id, u.account_id, p.seq, u.pet_id, $10, 1, u.status, u.reason, u.message, u.history, u.version,
           u.at, u.at
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[],
           $8::text[], $9::bigint[], $11::bigint[]) AS u(id, account_id, applicant_id, pet_id, status, reason,
           message, history, version, at)
         JOIN applicants p ON p.id = u.applicant_id
         ORDER BY u.at`,
        [
          ...[col('applicationId'), col('accountId'), col('applicantId'), col('petId'), col('status')],
          ...[col('statusReason'), col('message'), col('history'), col('version'), ANSWERS_JSON, col('at')],
        ],
      );
    }
    await client.query('ANALYZE applicants, applications');
  });
}

/** Enterprise accounts (no keys: the approvals come from a staff key), ids in creation order. */
async function createAccounts(env: Record<string, string>, count: number): Promise<number[]> {
  const database = await openDatabase(loadConfig(env));
  try {
    const accounts = database.repository(accountRepository);
    const ids: number[] = [];
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const account = await accounts.upsertAccount(
        {
          name: `bench-applicants-${i}`,
          plan: 'enterprise',
          perMinute: 1_000_000_000,
          perDay: 1_000_000_000,
        },
        now,
      );
      ids.push(account.id);
    }
    return ids;
  } finally {
    await database.close();
  }
}

/** The id of the account named `name` (the staff key's). */
async function accountId(env: Record<string, string>, name: string): Promise<number> {
  const database = await openDatabase(loadConfig(env));
  try {
    const account = await database.repository(accountRepository).findAccount(name);
    if (!account) throw new Error(`no account ${name}`);
    return account.id;
  } finally {
    await database.close();
  }
}

export async function startApplicationsService(
  ctx: Context,
  backend: Backend,
  setup: ApplicationsSetup,
): Promise<ApplicationsService> {
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of cleanups.reverse()) await step().catch((e: Error) => ctx.log(`cleanup: ${e.message}`));
  };
  let env: Record<string, string>;
  let insert: (rows: SeedRow[]) => Promise<void>;
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-bench-applications-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'db.sqlite');
    env = { DATABASE_URL: `sqlite:${file}` };
    insert = async (rows) => insertSqlite(file, rows);
  } else {
    const { dropSchema, postgresUrl } = await import('../../support/postgres.js');
    const { deleteKeys } = await import('../../support/redis.js');
    const schema = uniqueName('bench_applications');
    cleanups.push(() => dropSchema(schema));
    cleanups.push(async () => {
      await deleteKeys(REDIS_URL, `${schema}:`);
    });
    env = { DATABASE_URL: postgresUrl(schema), REDIS_URL, REDIS_PREFIX: `${schema}:` };
    insert = (rows) => insertPostgres(schema, rows);
  }
  Object.assign(env, { LOG_LEVEL: 'info', NODE_OPTIONS: '' });
  try {
    const started = Date.now();
    const key = await createKey(env, STAFF_ACCOUNT);
    await seed(env, setup.pets);
    const seeded = Date.now();
    const available = Math.floor(setup.pets / 4) * 2;
    const now = Date.now();
    if (setup.queue) {
      const staff = await accountId(env, STAFF_ACCOUNT);
      await insert(
        seedRows(setup.queue, 0, now, (i) => ({
          accountId: staff,
          petId: availablePet(i % available),
          status: QUEUE_CYCLE[i % QUEUE_CYCLE.length]!,
        })),
      );
    }
    const approvable: string[] = [];
    if (setup.approvable) {
      if (setup.approvable > available) throw new Error(`${setup.pets} pets: too few for the approvals`);
      const accounts = await createAccounts(env, APPROVAL_ACCOUNTS);
      const rows = seedRows(setup.approvable, 1 << 30, now, (i) => ({
        accountId: accounts[i % accounts.length]!,
        petId: availablePet(i),
        status: 'in_review',
      }));
      await insert(rows);
      approvable.push(...rows.map((r) => r.applicationId));
    }
    ctx.log(
      `applications (${backend}): ${setup.pets} pets, ${setup.queue ?? 0} queued, ${setup.approvable ?? 0} ` +
        `in review, set up in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
        `(applications and accounts ${((Date.now() - seeded) / 1000).toFixed(1)} s)`,
    );
    const logName = `service-applications-${backend}`;
    const server = await ctx.serve(`service (applications, ${backend})`, logName, env);
    cleanups.push(async () => {
      await terminate(server);
      trimLog(logFile(logName));
    });
    let applicant = 0;
    let nextApproval = 0;
    return {
      server,
      auth: { authorization: `Bearer ${key}` },
      submissions: new FreshRequests(() => {
        const n = applicant++;
        return {
          method: 'POST',
          path: '/v1/applications',
          body: JSON.stringify({
            petId: availablePet(n % available),
            applicant: { name: 'Bench Applicant', email: `bench-new-${n}@example.com` },
            answers: ANSWERS,
            consent: { dataProcessing: true },
          }),
        };
      }),
      approvals: new FreshRequests(() => {
        const id = approvable[nextApproval];
        if (id === undefined)
          throw new Error(`the ${approvable.length} applications in review are all approved`);
        nextApproval++;
        return { method: 'POST', path: `/v1/applications/${id}/approve`, body: '{}' };
      }),
      cleanup,
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** A fresh-request load on the applications service (submissions or approvals). */
export function freshLoad(s: ApplicationsService, fresh: FreshRequests): Load {
  return {
    pid: s.server.child.pid!,
    url: s.server.origin,
    headers: { ...s.auth, 'content-type': 'application/json' },
    fresh,
  };
}

/** The staff's queue: the first page of `submitted` applications, newest first, every account's. */
export const QUEUE_PATH = '/v1/applications?status=submitted&limit=20';

/** Follows `Link: rel="next"` from `path` `pages` times; returns the path of the page reached. */
export async function pathAfter(s: ApplicationsService, path: string, pages: number): Promise<string> {
  let current = path;
  for (let i = 0; i < pages; i++) {
    const res = await fetch(`${s.server.origin}${current}`, { headers: s.auth });
    const body = (await res.json()) as { status: string }[];
    if (res.status !== 200) throw new Error(`GET ${current} answered ${res.status}: ${JSON.stringify(body)}`);
    if (body.length !== 20 || body.some((a) => a.status !== 'submitted')) {
      throw new Error(`GET ${current}: page ${i + 1} has ${body.length} rows, not 20 submitted`);
    }
    const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
    if (!link) throw new Error(`GET ${current}: no next page after page ${i + 1}`);
    const next = new URL(link[1]!, s.server.origin);
    current = `${next.pathname}${next.search}`;
  }
  return current;
}

/** Pages followed from the first for the depth rows: page DEPTH + 1 is compared with page 1. */
export const DEPTH = 50;

/**
 * The depth row: the staff queue's page DEPTH + 1 (the cursor the service issued, reached through
 * `Link: rel="next"`) against page 1, each against the shared baseline; cost = page 1's ratio ÷ the deep page's.
 */
export async function measureDepth(ctx: Context, s: ApplicationsService, backend: Backend) {
  const deep = await pathAfter(s, QUEUE_PATH, DEPTH);
  const target = (path: string): Load => ({
    pid: s.server.child.pid!,
    url: `${s.server.origin}${path}`,
    headers: s.auth,
  });
  const top = await ctx.measure(`applications queue (${backend}), page 1`, target(QUEUE_PATH));
  const down = await ctx.measure(`applications queue (${backend}), page ${DEPTH + 1}`, target(deep));
  // A page answered too slowly to complete within a round has no ratio, and no cost to judge by.
  const cost = top.rps > 0 && down.rps > 0 ? top.ratio / down.ratio : NaN;
  return {
    row: {
      value: `${cost.toFixed(2)}×`,
      note:
        `page 1 ${top.rps.toFixed(0)} req/s, ratio ${top.ratio.toFixed(2)}, p99 ${top.p99.toFixed(1)} ms; ` +
        `page ${DEPTH + 1} ${down.rps.toFixed(0)} req/s, ratio ${down.ratio.toFixed(2)}, p99 ${down.p99.toFixed(1)} ms`,
    },
    metrics: { cost },
    failures: top.non2xx + top.errors + down.non2xx + down.errors,
  };
}
