/**
 * The applications' store on PostgreSQL: one transaction per write, or per turn of the event loop for the
 * submissions and actions without an Idempotency-Key (submit.postgres.ts, act.postgres.ts: each still all or
 * nothing, answered after its commit); the locks are taken in the one order every writer of pets, orders and
 * applications follows (pets → orders → applicants/applications, see store.ts), so none can deadlock. I/O
 * only, the rules are in decisions.ts.
 */
import type { PoolClient } from 'pg';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import type { PostgresDatabase } from '../../db/postgres.js';
import { ordersWithin } from '../orders/index.js';
import { petsWithin } from '../pets/index.js';
import {
  applicationEvents,
  decidePatch,
  eraseApplication,
  erasedEvent,
  retentionDue,
  type ApplicantRecord,
  type ApplicationRecord,
  type FormRecord,
} from './decisions.js';
import type { Question } from './schemas.js';
import {
  APPLICANT_COLUMNS,
  APPLICATION_COLUMNS,
  applicantFromRow,
  applicantRecordPattern,
  applicationFromRow,
  FROM,
  fullFromRow,
  listConditions,
  ParsedForm,
  recordOf,
  replayedId,
  updateValues,
} from './rows.js';
import type {
  ActInput,
  ApplicationStore,
  FullApplication,
  ListQuery,
  PatchInput,
  Replayable,
  SubmitInput,
  WriteOutcome,
} from './store.js';
import { actAll, actionBatch } from './act.postgres.js';
import { SQL } from './sql.postgres.js';
import { Refused, refusedAsOutcome, submissionBatch, submitAll } from './submit.postgres.js';
import { PostgresApplicationRows } from './rows.postgres.js';

const SELECT = `SELECT ${APPLICATION_COLUMNS}, ${APPLICANT_COLUMNS} ${FROM}`;

type Row = Record<string, unknown>;

const formOf = (row: Row): FormRecord => ({
  version: Number(row.version),
  questions: (typeof row.questions === 'string' ? JSON.parse(row.questions) : row.questions) as Question[],
  updatedAt: Number(row.updated_at),
});

export class PostgresApplicationStore extends PostgresApplicationRows implements ApplicationStore {
  private readonly idempotency: PostgresIdempotency;
  private readonly forms = new ParsedForm();
  /** Submissions without an Idempotency-Key, one transaction per turn (submit.postgres.ts). */
  private readonly submissions = submissionBatch(
    this.db,
    (input) => this.run(undefined, 201, (client) => this.submitOne(client, input)) as Promise<WriteOutcome>,
    (client, inputs, failed) => submitAll(client, this.events, this.forms, inputs, failed),
  );

  /** Actions without an Idempotency-Key, one transaction per turn (act.postgres.ts). */
  private readonly actions = actionBatch(
    this.db,
    (input) => this.run(undefined, 200, (client) => this.actOne(client, input)) as Promise<WriteOutcome>,
    (client, inputs) => actAll(this.db, client, this.events, inputs),
  );

  constructor(db: PostgresDatabase) {
    super(db);
    this.idempotency = db.repository(idempotencyRepository);
  }

  async form(): Promise<FormRecord> {
    const [row] = await this.db.query<Row>({ name: 'applications_form', text: SQL.form });
    return formOf(row!);
  }

  putForm(questions: Question[], ifMatch: ((version: number) => boolean) | undefined, now: number) {
    return this.db.transaction(async (client) => {
      const current = formOf((await client.query<Row>(SQL.lockForm)).rows[0]!);
      if (ifMatch && !ifMatch(current.version))
        return { kind: 'precondition_failed' as const, version: current.version };
      await client.query(SQL.insertForm, [current.version + 1, JSON.stringify(questions), now]);
      return { kind: 'done' as const, form: { version: current.version + 1, questions, updatedAt: now } };
    });
  }

  /** One write in one transaction, under its idempotency record; a `Refused` rolls back and answers. */
  private async run(
    idempotency: IdempotencyInput | undefined,
    status: number,
    work: (client: PoolClient) => Promise<WriteOutcome>,
  ): Promise<Replayable<WriteOutcome>> {
    try {
      return await this.db.transaction(async (client) =>
        idempotency
          ? settleIdempotent(
              await this.idempotency.run(
                client,
                idempotency,
                () => work(client),
                (o) => recordOf(o, status),
              ),
              replayedId,
            )
          : work(client),
      );
    } catch (error) {
      if (error instanceof Refused) return error.refusal;
      const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
      // A concurrent submission for the same applicant and pet committed first.
      if (code === '23505' && constraint === 'applications_one_open') return { kind: 'application_exists' };
      throw error;
    }
  }

  submit(input: SubmitInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    if (idempotency === undefined) return this.submissions.add(input).catch(refusedAsOutcome);
    return this.run(idempotency, 201, (client) => this.submitOne(client, input));
  }

  private async submitOne(client: PoolClient, input: SubmitInput): Promise<WriteOutcome> {
    return (await submitAll(client, this.events, this.forms, [input], new Map()))[0]!;
  }

  patch(input: PatchInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    return this.run(idempotency, 200, async (client) => {
      const { rows } = await client.query<Row>({
        name: 'applications_lock_by_id',
        text: SQL.lockById,
        values: [input.id],
      });
      const before = rows[0] ? fullFromRow(rows[0]) : undefined;
      const form = formOf((await client.query<Row>({ name: 'applications_form', text: SQL.form })).rows[0]!);
      const decision = decidePatch(before?.application, form, input.request);
      if (decision.kind !== 'patched') return decision;
      const applicant = before!.applicant;
      if (input.applicant) {
        const next = { ...applicant, ...input.applicant };
        await client.query(SQL.patchApplicant, [
          next.name,
          next.phone ?? null,
          next.address ? JSON.stringify(next.address) : null,
          input.request.now,
          applicant.seq,
        ]);
      }
      await this.save(client, before!.application, decision.after, input.request.now, true);
      return { kind: 'done', application: await this.full(client, decision.after.seq) };
    });
  }

  act(input: ActInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    if (idempotency === undefined) return this.actions.add(input);
    return this.run(idempotency, 200, (client) => this.actOne(client, input));
  }

  private async actOne(client: PoolClient, input: ActInput): Promise<WriteOutcome> {
    return (await actAll(this.db, client, this.events, [input]))[0]!;
  }

  async get(id: string): Promise<FullApplication | undefined> {
    const [row] = await this.db.query<Row>({ name: 'applications_by_id', text: SQL.byId, values: [id] });
    return row ? fullFromRow(row) : undefined;
  }

  async list(query: ListQuery): Promise<FullApplication[]> {
    const { where, values } = listConditions(query, (n) => `$${n}`, true);
    const rows = await this.db.query<Row>({ text: `${SELECT} ${where}`, values });
    return rows.map(fullFromRow);
  }

  /** The read_versions sum seen with this turn's key lookups; applications and applicants bump it (025). */
  readVersion(): string | undefined {
    const version = this.db.readVersion;
    return version === undefined ? undefined : String(version);
  }

  async applicant(id: string): Promise<ApplicantRecord | undefined> {
    const [row] = await this.db.query<Row>({
      name: 'applicants_by_id',
      text: SQL.applicantById,
      values: [id],
    });
    return row ? applicantFromRow(row) : undefined;
  }

  async applicationsOf(applicantSeq: number): Promise<ApplicationRecord[]> {
    const rows = await this.db.query<Row>({
      name: 'applications_of_applicant',
      text: SQL.ofApplicant,
      values: [applicantSeq],
    });
    return rows.map(applicationFromRow);
  }

  private async eraseInTransaction(
    client: PoolClient,
    applicantSeq: number,
    keyId: string | null,
    now: number,
  ): Promise<void> {
    // Pets first (their orders may be cancelled), then the applications, then the applicant.
    const unlocked = (
      await client.query<Row>({
        name: 'applications_of_applicant',
        text: SQL.ofApplicant,
        values: [applicantSeq],
      })
    ).rows;
    await petsWithin.postgresLock(
      client,
      unlocked.map((row) => Number(row.pet_id)),
      'update',
    );
    const apps = (
      await client.query<Row>({
        name: 'applications_lock_of_applicant',
        text: SQL.lockOfApplicant,
        values: [applicantSeq],
      })
    ).rows.map(applicationFromRow);
    const applicant = applicantFromRow(
      (await client.query<Row>({ name: 'applicants_lock', text: SQL.lockApplicant, values: [applicantSeq] }))
        .rows[0]!,
    );
    if (applicant.erasedAt !== null) return;
    for (const app of apps) {
      const erased = eraseApplication(app, now, keyId);
      await client.query({
        name: 'applications_update',
        text: SQL.updateApplication,
        values: updateValues(erased.after),
      });
      if (erased.withdrawn) await this.events.appendAll(client, applicationEvents(app, erased.after, now));
      if (erased.cancelOrder !== null)
        await ordersWithin.postgresCancel(this.db, client, erased.cancelOrder, now);
    }
    await client.query(SQL.eraseApplicant, [now, applicant.seq]);
    await client.query(SQL.forgetRecords, [applicant.accountId, applicantRecordPattern(applicant.id)]);
    await this.events.append(client, erasedEvent(applicant, now));
  }

  async erase(input: { id: string; keyId: string | null; now: number }, idempotency?: IdempotencyInput) {
    const work = async (client: PoolClient): Promise<{ kind: 'erased' } | { kind: 'not_found' }> => {
      const [row] = (
        await client.query<Row>({ name: 'applicants_by_id', text: SQL.applicantById, values: [input.id] })
      ).rows;
      if (!row) return { kind: 'not_found' };
      await this.eraseInTransaction(client, Number(row.p_seq), input.keyId, input.now);
      return { kind: 'erased' };
    };
    return this.db.transaction(async (client) =>
      idempotency
        ? settleIdempotent(
            await this.idempotency.run(
              client,
              idempotency,
              () => work(client),
              (r) => (r.kind === 'erased' ? { status: 204, body: { id: null } } : undefined),
            ),
            replayedId,
          )
        : work(client),
    );
  }

  async eraseExpired(before: number, now: number, batch = 100): Promise<number> {
    const seqs = await this.db.query<{ seq: number }>({
      name: 'applicants_retention',
      text: SQL.retentionCandidates,
      values: [before, batch],
    });
    let erased = 0;
    for (const { seq } of seqs) {
      // Each in its own transaction, decided again under the locks (an application may have come since).
      const done = await this.db.transaction(async (client) => {
        const apps = (
          await client.query<Row>({ name: 'applications_of_applicant', text: SQL.ofApplicant, values: [seq] })
        ).rows.map(applicationFromRow);
        if (!retentionDue(apps, before)) return false;
        await this.eraseInTransaction(client, Number(seq), null, now);
        return true;
      });
      if (done) erased++;
    }
    return erased;
  }
}
