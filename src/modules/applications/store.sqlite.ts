/**
 * The applications' store on SQLite: every write runs in the turn's group commit under the write lock
 * (SqliteDatabase.writeInTurn), so what it reads cannot change before it writes; I/O only, the rules are in
 * decisions.ts. The orders' and pets' listeners run on the same connection inside their writes.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { SqliteIdempotency } from '../../db/idempotency/repository.sqlite.js';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { eventRepository, type SqliteEventAppender } from '../events/index.js';
import { ordersWithin, type OrderMove } from '../orders/index.js';
import { petsWithin, type PetRemoval } from '../pets/index.js';
import {
  APPROVAL_ORDER_LIMIT,
  applicationEvents,
  decideAction,
  decideOrderMove,
  decidePatch,
  decidePetRemoved,
  decideSubmit,
  initialHistory,
  eraseApplication,
  erasedEvent,
  retentionDue,
  type ApplicantRecord,
  type ApplicationRecord,
  type FormRecord,
} from './decisions.js';
import {
  APPLICANT_COLUMNS,
  APPLICANT_RETURNING,
  APPLICATION_COLUMNS,
  applicantFromRow,
  applicantRecordPattern,
  applicationFromRow,
  FROM,
  fullFromRow,
  listConditions,
  MAX_EXPORTED,
  newApplicantId,
  newApplicationId,
  OPEN_SQL,
  ParsedForm,
  recordOf,
  replayedId,
  submittedRecord,
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
import type { Question } from './schemas.js';

type Row = Record<string, unknown>;

export class SqliteApplicationStore implements ApplicationStore {
  private readonly db: BetterSqlite3.Database;
  private readonly idempotency: SqliteIdempotency;
  private readonly events: SqliteEventAppender;
  private readonly stmt;
  private readonly lists = new Map<string, BetterSqlite3.Statement<unknown[], Row>>();
  private readonly forms = new ParsedForm();

  constructor(private readonly database: SqliteDatabase) {
    const db = (this.db = database.db);
    this.idempotency = database.repository(idempotencyRepository);
    this.events = database.repository(eventRepository);
    const one = (where: string) =>
      db.prepare<unknown[], Row>(
        `SELECT ${APPLICATION_COLUMNS}, ${APPLICANT_COLUMNS} ${FROM} WHERE ${where}`,
      );
    this.stmt = {
      form: db.prepare<[], Row>(
        'SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1',
      ),
      insertForm: db.prepare(
        'INSERT INTO application_forms (version, questions, updated_at) VALUES (?, ?, ?)',
      ),
      byId: one('a.id = ?'),
      bySeq: one('a.seq = ?'),
      byOrder: one(`a.order_id = ? AND a.status IN ${OPEN_SQL}`),
      openOfPet: one(`a.pet_id = ? AND a.status IN ${OPEN_SQL} ORDER BY a.seq`),
      ofApplicant: one('a.applicant_seq = ? ORDER BY a.seq LIMIT ' + MAX_EXPORTED),
      applicantById: db.prepare<[string], Row>(
        `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.id = ?`,
      ),
      // The applicant (by account and email) with their open applications, all of them and for the pet.
      applicantOpen: db.prepare<[number, number, string], { seq: number; n: number; pet: number }>(
        `SELECT p.seq, (SELECT count(*) FROM applications a WHERE a.applicant_seq = p.seq AND a.status IN ${OPEN_SQL}) AS n,
           EXISTS (SELECT 1 FROM applications a WHERE a.applicant_seq = p.seq AND a.pet_id = ?
             AND a.status IN ${OPEN_SQL}) AS pet
         FROM applicants p WHERE p.account_id = ? AND p.email_key = ?`,
      ),
      upsertApplicant: db.prepare<unknown[], Row>(
        `INSERT INTO applicants (id, account_id, email_key, name, email, phone, address, consent_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (account_id, email_key) DO UPDATE SET name = excluded.name, email = excluded.email,
           phone = coalesce(excluded.phone, phone), address = coalesce(excluded.address, address),
           consent_at = excluded.consent_at, updated_at = excluded.updated_at
         RETURNING ${APPLICANT_RETURNING}`,
      ),
      insertApplication: db.prepare<unknown[], Row>(
        `INSERT INTO applications (id, account_id, applicant_seq, pet_id, answers, form_version, status, history, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 'submitted', ?, ?, ?) RETURNING seq`,
      ),
      updateApplication: db.prepare(
        `UPDATE applications SET answers = ?, form_version = ?, status = ?, status_reason = ?, message = ?, order_id = ?,
           history = ?, version = ?, updated_at = ? WHERE seq = ?`,
      ),
      patchApplicant: db.prepare(
        'UPDATE applicants SET name = ?, phone = ?, address = ?, updated_at = ? WHERE seq = ?',
      ),
      eraseApplicant: db.prepare(
        `UPDATE applicants SET name = NULL, email = NULL, email_key = NULL, phone = NULL, address = NULL,
           erased_at = ?, updated_at = ? WHERE seq = ?`,
      ),
      forgetRecords: db.prepare('DELETE FROM idempotency_keys WHERE account_id = ? AND body LIKE ?'),
      retentionCandidates: db
        .prepare<[number, number], number>(
          `SELECT p.seq FROM applicants p WHERE p.erased_at IS NULL AND NOT EXISTS (SELECT 1 FROM applications a
             WHERE a.applicant_seq = p.seq AND (a.status IN ${OPEN_SQL} OR a.status = 'adopted' OR a.updated_at >= ?))
           ORDER BY p.seq LIMIT ?`,
        )
        .pluck(true),
      applicantBySeq: db.prepare<[number], Row>(
        `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.seq = ?`,
      ),
    };
  }

  private full(seq: number): FullApplication {
    return fullFromRow(this.stmt.bySeq.get(seq)!);
  }

  private save(
    before: ApplicationRecord | undefined,
    after: ApplicationRecord,
    now: number,
    patched = false,
  ): void {
    this.stmt.updateApplication.run(...updateValues(after));
    this.events.appendAll(applicationEvents(before, after, now, patched));
  }

  private currentForm(): FormRecord {
    return this.forms.of(this.stmt.form.get()!);
  }

  form(): Promise<FormRecord> {
    return runAsPromise(() => this.currentForm());
  }

  putForm(questions: Question[], ifMatch: ((version: number) => boolean) | undefined, now: number) {
    return this.database.writeInTurn(() => {
      const current = this.currentForm();
      if (ifMatch && !ifMatch(current.version))
        return { kind: 'precondition_failed' as const, version: current.version };
      this.stmt.insertForm.run(current.version + 1, JSON.stringify(questions), now);
      return { kind: 'done' as const, form: { version: current.version + 1, questions, updatedAt: now } };
    });
  }

  private run(idempotency: IdempotencyInput | undefined, status: number, work: () => WriteOutcome) {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(idempotency, work, (outcome) => recordOf(outcome, status)),
        replayedId,
      ),
    );
  }

  submit(input: SubmitInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    return this.run(idempotency, 201, () => {
      const emailKey = input.applicant.email.toLowerCase();
      const open = this.stmt.applicantOpen.get(input.petId, input.accountId, emailKey);
      const form = this.forms.of(this.stmt.form.get()!);
      const refusal = decideSubmit({
        form,
        answers: input.answers,
        petStatus: petsWithin.sqliteStatus(this.database, input.petId),
        openForApplicant: open ? Number(open.n) : 0,
        openForPet: open ? Number(open.pet) > 0 : false,
        max: input.max,
      });
      if (refusal) return refusal;
      const { name, email, phone, address } = input.applicant;
      const applicant = applicantFromRow(
        this.stmt.upsertApplicant.get(
          newApplicantId(),
          input.accountId,
          emailKey,
          name,
          email,
          phone ?? null,
          address ? JSON.stringify(address) : null,
          input.now,
          input.now,
          input.now,
        )!,
      );
      const history = initialHistory(input.now, input.keyId);
      const id = newApplicationId();
      const appSeq = Number(
        this.stmt.insertApplication.get(
          id,
          input.accountId,
          applicant.seq,
          input.petId,
          JSON.stringify(input.answers),
          form.version,
          JSON.stringify(history),
          input.now,
          input.now,
        )!.seq,
      );
      const application = submittedRecord(appSeq, id, input, applicant, form.version, history);
      this.events.appendAll(applicationEvents(undefined, application, input.now));
      return { kind: 'done', application: { application, applicant } };
    });
  }

  patch(input: PatchInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    return this.run(idempotency, 200, () => {
      const row = this.stmt.byId.get(input.id);
      const before = row ? fullFromRow(row) : undefined;
      const decision = decidePatch(before?.application, this.currentForm(), input.request);
      if (decision.kind !== 'patched') return decision;
      const applicant = before!.applicant;
      if (input.applicant) {
        const next = { ...applicant, ...input.applicant };
        this.stmt.patchApplicant.run(
          next.name,
          next.phone ?? null,
          next.address ? JSON.stringify(next.address) : null,
          input.request.now,
          applicant.seq,
        );
      }
      this.save(before!.application, decision.after, input.request.now, true);
      return { kind: 'done', application: this.full(decision.after.seq) };
    });
  }

  act(input: ActInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>> {
    return this.run(idempotency, 200, () => {
      const row = this.stmt.byId.get(input.id);
      const before = row ? applicationFromRow(row) : undefined;
      const decision = decideAction(before, input.request);
      if (decision.kind !== 'move') return decision;
      let after = decision.after;
      const now = input.request.now;
      if (decision.placeOrder) {
        const placed = ordersWithin.sqlitePlace(this.database, {
          accountId: after.accountId,
          petId: after.petId,
          maxOpen: APPROVAL_ORDER_LIMIT,
          now,
        });
        if (placed.kind !== 'placed')
          return { kind: 'pet_not_available', unknown: placed.kind === 'unknown_pet' };
        after = { ...after, orderId: placed.order.id };
      }
      // Saved before the order is cancelled, so the cancellation's listener finds it no longer approved.
      this.save(before, after, now);
      if (decision.cancelOrder !== null) ordersWithin.sqliteCancel(this.database, decision.cancelOrder, now);
      return { kind: 'done', application: this.full(after.seq) };
    });
  }

  get(id: string): Promise<FullApplication | undefined> {
    return runAsPromise(() => {
      const row = this.stmt.byId.get(id);
      return row ? fullFromRow(row) : undefined;
    });
  }

  list(query: ListQuery): Promise<FullApplication[]> {
    return runAsPromise(() => {
      const { where, values } = listConditions(query, () => '?', false);
      const sql = `SELECT ${APPLICATION_COLUMNS}, ${APPLICANT_COLUMNS} ${FROM} ${where}`;
      let stmt = this.lists.get(sql);
      if (!stmt) {
        stmt = this.db.prepare<unknown[], Row>(sql);
        if (this.lists.size < 256) this.lists.set(sql, stmt);
      }
      return stmt.all(...values).map(fullFromRow);
    });
  }

  /** data_version and this connection's total_changes(), read with this turn's key lookups. */
  readVersion(): string | undefined {
    return this.database.readVersion;
  }

  applicant(id: string): Promise<ApplicantRecord | undefined> {
    return runAsPromise(() => {
      const row = this.stmt.applicantById.get(id);
      return row ? applicantFromRow(row) : undefined;
    });
  }

  applicationsOf(applicantSeq: number): Promise<ApplicationRecord[]> {
    return runAsPromise(() => this.stmt.ofApplicant.all(applicantSeq).map(applicationFromRow));
  }

  private eraseInTransaction(applicant: ApplicantRecord, keyId: string | null, now: number): void {
    for (const row of this.stmt.ofApplicant.all(applicant.seq)) {
      const app = applicationFromRow(row);
      const erased = eraseApplication(app, now, keyId);
      this.stmt.updateApplication.run(...updateValues(erased.after));
      if (erased.withdrawn) this.events.appendAll(applicationEvents(app, erased.after, now));
      if (erased.cancelOrder !== null) ordersWithin.sqliteCancel(this.database, erased.cancelOrder, now);
    }
    this.stmt.eraseApplicant.run(now, now, applicant.seq);
    this.stmt.forgetRecords.run(applicant.accountId, applicantRecordPattern(applicant.id));
    this.events.append(erasedEvent(applicant, now));
  }

  erase(input: { id: string; keyId: string | null; now: number }, idempotency?: IdempotencyInput) {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          (): { kind: 'erased' } | { kind: 'not_found' } => {
            const row = this.stmt.applicantById.get(input.id);
            if (!row) return { kind: 'not_found' };
            const applicant = applicantFromRow(row);
            if (applicant.erasedAt === null) this.eraseInTransaction(applicant, input.keyId, input.now);
            return { kind: 'erased' };
          },
          (result) => (result.kind === 'erased' ? { status: 204, body: { id: null } } : undefined),
        ),
        replayedId,
      ),
    ) as Promise<Replayable<{ kind: 'erased' } | { kind: 'not_found' }>>;
  }

  eraseExpired(before: number, now: number, batch = 100): Promise<number> {
    return this.database.writeInTurn(() => {
      let erased = 0;
      for (const seq of this.stmt.retentionCandidates.all(before, batch)) {
        const applicant = applicantFromRow(this.stmt.applicantBySeq.get(seq)!);
        const apps = this.stmt.ofApplicant.all(seq).map(applicationFromRow);
        if (!retentionDue(apps, before)) continue;
        this.eraseInTransaction(applicant, null, now);
        erased++;
      }
      return erased;
    });
  }

  /** An order moved (orders' listener, within.ts): adoption, closing, in the order's transaction. */
  onOrderMoves(moves: readonly OrderMove[]): void {
    for (const move of moves) {
      if (move.to !== 'delivered' && move.to !== 'cancelled') continue;
      const apps =
        move.to === 'delivered'
          ? this.stmt.openOfPet.all(move.petId).map(applicationFromRow)
          : this.stmt.byOrder.all(move.orderId).map(applicationFromRow);
      for (const after of decideOrderMove(apps, move)) {
        this.save(
          apps.find((a) => a.seq === after.seq),
          after,
          move.now,
        );
      }
    }
  }

  /** Pets removed (pets' listener): their open applications close. */
  onPetRemovals(removals: readonly PetRemoval[]): void {
    for (const removal of removals) {
      const apps = this.stmt.openOfPet.all(removal.petId).map(applicationFromRow);
      for (const after of decidePetRemoved(apps, removal.now)) {
        this.save(
          apps.find((a) => a.seq === after.seq),
          after,
          removal.now,
        );
      }
    }
  }
}
