/** What both stores share: ids, the SQL's columns and conditions, row mapping, idempotency records. */
import { randomBytes } from 'node:crypto';
import type { ApplicantRecord, ApplicationRecord, FormRecord } from './decisions.js';
import type { Answers, ApplicationStatus, Question } from './schemas.js';
import type { FullApplication, ListQuery, SubmitInput, WriteOutcome } from './store.js';

export const MAX_EXPORTED = 10_000;

// Ids are drawn from a pool filled 4 KiB at a time: one randomBytes call per id was 14 % of a submission's
// CPU in the profile (each call a synchronous trip into the system's generator).
const ID_BYTES = 10;
let pool = Buffer.alloc(0);
let offset = 0;
function randomHex(): string {
  if (offset + ID_BYTES > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += ID_BYTES;
  return pool.toString('hex', offset - ID_BYTES, offset);
}

export const newApplicationId = (): string => `app_${randomHex()}`;
export const newApplicantId = (): string => `apl_${randomHex()}`;

/**
 * How the stores answer a write again (`settleIdempotent`'s replay): with the id the record keeps, whose
 * application the route reads as it is now (see recordOf).
 */
export function replayedId(
  status: number,
  body: unknown,
): { kind: 'replayed'; status: number; id: string | null } {
  return { kind: 'replayed', status, id: (body as { id?: string } | null)?.id ?? null };
}

/** What an idempotency record keeps of a write: ids only (see the contract above). */
export function recordOf(
  outcome: WriteOutcome,
  status: number,
): { status: number; body: unknown } | undefined {
  return outcome.kind === 'done'
    ? {
        status,
        body: { id: outcome.application.application.id, applicantId: outcome.application.applicant.id },
      }
    : undefined;
}

export const OPEN_SQL = "('submitted', 'in_review', 'needs_info', 'approved')";

export const APPLICANT_COLUMNS = `p.seq AS p_seq, p.id AS p_id, p.account_id AS p_account_id, p.name AS p_name,
  p.email AS p_email, p.phone AS p_phone, p.address AS p_address, p.consent_at AS p_consent_at,
  p.created_at AS p_created_at, p.updated_at AS p_updated_at, p.erased_at AS p_erased_at`;
/** APPLICANT_COLUMNS as an upsert of the applicant returns them (no alias in RETURNING). */
export const APPLICANT_RETURNING = `seq AS p_seq, id AS p_id, account_id AS p_account_id, name AS p_name,
  email AS p_email, phone AS p_phone, address AS p_address, consent_at AS p_consent_at,
  created_at AS p_created_at, updated_at AS p_updated_at, erased_at AS p_erased_at`;
export const APPLICATION_COLUMNS = `a.seq, a.id, a.account_id, a.applicant_seq, p.id AS applicant_id, a.pet_id,
  a.answers, a.form_version, a.status, a.status_reason, a.message, a.order_id, a.history, a.version,
  a.created_at, a.updated_at`;
export const FROM = 'FROM applications a JOIN applicants p ON p.seq = a.applicant_seq';

type Row = Record<string, unknown>;
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export function applicantFromRow(row: Row): ApplicantRecord {
  return {
    seq: num(row.p_seq),
    id: String(row.p_id),
    accountId: num(row.p_account_id),
    name: strOrNull(row.p_name),
    email: strOrNull(row.p_email),
    phone: strOrNull(row.p_phone),
    address: row.p_address ? (JSON.parse(String(row.p_address)) as ApplicantRecord['address']) : null,
    consentAt: num(row.p_consent_at),
    createdAt: num(row.p_created_at),
    updatedAt: num(row.p_updated_at),
    erasedAt: numOrNull(row.p_erased_at),
  };
}

export function applicationFromRow(row: Row): ApplicationRecord {
  return {
    seq: num(row.seq),
    id: String(row.id),
    accountId: num(row.account_id),
    applicantSeq: num(row.applicant_seq),
    applicantId: String(row.applicant_id),
    petId: num(row.pet_id),
    answers: row.answers ? (JSON.parse(String(row.answers)) as Answers) : null,
    formVersion: num(row.form_version),
    status: row.status as ApplicationStatus,
    statusReason: strOrNull(row.status_reason),
    message: strOrNull(row.message),
    orderId: numOrNull(row.order_id),
    history: JSON.parse(String(row.history)) as ApplicationRecord['history'],
    version: num(row.version),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export const fullFromRow = (row: Row): FullApplication => ({
  application: applicationFromRow(row),
  applicant: applicantFromRow(row),
});

/**
 * The application a submission has just inserted, as reading it back would give it (the columns it wrote,
 * the defaults of the rest), so a submission costs no statement to read it again.
 */
export function submittedRecord(
  seq: number,
  id: string,
  input: SubmitInput,
  applicant: ApplicantRecord,
  formVersion: number,
  history: ApplicationRecord['history'],
): ApplicationRecord {
  return {
    seq,
    id,
    accountId: input.accountId,
    applicantSeq: applicant.seq,
    applicantId: applicant.id,
    petId: input.petId,
    // The request's parsed JSON, stored as its JSON text: reading it back would give the same values.
    answers: { ...input.answers },
    formVersion,
    status: 'submitted',
    statusReason: null,
    message: null,
    orderId: null,
    history,
    version: 1,
    createdAt: input.now,
    updatedAt: input.now,
  };
}

/**
 * The current form as parsed from its stored row, parsed once per version: every submission checks its
 * answers against it, and a form changes only by a new version row (never in place).
 */
export class ParsedForm {
  private last: { text: string; form: FormRecord } | undefined;

  of(row: Row): FormRecord {
    const text = typeof row.questions === 'string' ? row.questions : JSON.stringify(row.questions);
    const version = Number(row.version);
    const updatedAt = Number(row.updated_at);
    const last = this.last;
    if (last && last.text === text && last.form.version === version && last.form.updatedAt === updatedAt)
      return last.form;
    const form = { version, questions: JSON.parse(text) as Question[], updatedAt };
    this.last = { text, form };
    return form;
  }
}

/** An application row's values for UPDATE_APPLICATION (in its placeholder order). */
export function updateValues(app: ApplicationRecord): (string | number | null)[] {
  return [
    app.answers === null ? null : JSON.stringify(app.answers),
    app.formVersion,
    app.status,
    app.statusReason,
    app.message,
    app.orderId,
    JSON.stringify(app.history),
    app.version,
    app.updatedAt,
    app.seq,
  ];
}

/**
 * The list query's conditions, with the backend's placeholders (`?` or `$n`); the statuses go as one array
 * parameter (`arrayStatuses`, PostgreSQL) or spread into `IN (…)`. The sort decides the keyset direction.
 */
export function listConditions(
  query: ListQuery,
  placeholder: (n: number) => string,
  arrayStatuses: boolean,
): { where: string; values: unknown[] } {
  const values: unknown[] = [];
  const where: string[] = [];
  const add = (sql: (p: string) => string, value: unknown): void => {
    values.push(value);
    where.push(sql(placeholder(values.length)));
  };
  if (query.accountId !== undefined) add((p) => `a.account_id = ${p}`, query.accountId);
  if (query.statuses && query.statuses.length > 0) {
    // One status as an equality: PostgreSQL then walks (status, seq) in order and stops at the page's end,
    // where `= ANY(array)` may read every row of the status and sort them.
    if (arrayStatuses && query.statuses.length === 1) add((p) => `a.status = ${p}`, query.statuses[0]);
    else if (arrayStatuses) add((p) => `a.status = ANY(${p}::text[])`, query.statuses);
    else {
      const marks = query.statuses.map((status) => {
        values.push(status);
        return placeholder(values.length);
      });
      where.push(`a.status IN (${marks.join(', ')})`);
    }
  }
  if (query.petId !== undefined) add((p) => `a.pet_id = ${p}`, query.petId);
  if (query.applicantId !== undefined)
    add((p) => `a.applicant_seq = (SELECT seq FROM applicants WHERE id = ${p})`, query.applicantId);
  const newest = query.sort === 'newest';
  if (query.after !== undefined) add((p) => `a.seq ${newest ? '<' : '>'} ${p}`, query.after);
  values.push(query.limit);
  return {
    where:
      `${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY a.seq ${newest ? 'DESC' : 'ASC'} ` +
      `LIMIT ${placeholder(values.length)}`,
    values,
  };
}

/** Idempotency records of the applicant's applications (their fingerprints hash the personal data sent). */
export const applicantRecordPattern = (applicantId: string): string => `%"applicantId":"${applicantId}"%`;
