/** The PostgreSQL store's statements (store.postgres.ts). */
import { APPLICANT_COLUMNS, APPLICATION_COLUMNS, FROM, MAX_EXPORTED, OPEN_SQL } from './rows.js';

const SELECT = `SELECT ${APPLICATION_COLUMNS}, ${APPLICANT_COLUMNS} ${FROM}`;

export const SQL = {
  form: 'SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1',
  lockForm:
    'SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1 FOR UPDATE',
  insertForm: 'INSERT INTO application_forms (version, questions, updated_at) VALUES ($1, $2, $3)',
  byId: `${SELECT} WHERE a.id = $1`,
  petOf: 'SELECT pet_id FROM applications WHERE id = $1',
  lockById: `${SELECT} WHERE a.id = $1 FOR UPDATE OF a`,
  bySeq: `${SELECT} WHERE a.seq = $1`,
  lockOpenOfPets: `${SELECT} WHERE a.pet_id = ANY($1::bigint[]) AND a.status IN ${OPEN_SQL} ORDER BY a.seq FOR UPDATE OF a`,
  lockOfApplicant: `${SELECT} WHERE a.applicant_seq = $1 ORDER BY a.seq LIMIT ${MAX_EXPORTED} FOR UPDATE OF a`,
  ofApplicant: `${SELECT} WHERE a.applicant_seq = $1 ORDER BY a.seq LIMIT ${MAX_EXPORTED}`,
  applicantById: `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.id = $1`,
  lockApplicant: `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.seq = $1 FOR UPDATE`,
  // Takes (or waits for) the applicant's row lock: concurrent submissions of one applicant serialise here.
  upsertApplicant: `INSERT INTO applicants (id, account_id, email_key, name, email, phone, address, consent_at, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8)
    ON CONFLICT (account_id, email_key) DO UPDATE SET name = excluded.name, email = excluded.email,
      phone = coalesce(excluded.phone, applicants.phone), address = coalesce(excluded.address, applicants.address),
      consent_at = excluded.consent_at, updated_at = excluded.updated_at
    RETURNING seq`,
  openCount: `SELECT count(*)::int AS n, count(*) FILTER (WHERE pet_id = $2)::int AS pet FROM applications
    WHERE applicant_seq = $1 AND status IN ${OPEN_SQL}`,
  insertApplication: `INSERT INTO applications (id, account_id, applicant_seq, pet_id, answers, form_version, status, history,
      created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'submitted', $7, $8, $8) RETURNING seq`,
  updateApplication: `UPDATE applications SET answers = $1, form_version = $2, status = $3, status_reason = $4,
    message = $5, order_id = $6, history = $7, version = $8, updated_at = $9 WHERE seq = $10`,
  patchApplicant: 'UPDATE applicants SET name = $1, phone = $2, address = $3, updated_at = $4 WHERE seq = $5',
  eraseApplicant: `UPDATE applicants SET name = NULL, email = NULL, email_key = NULL, phone = NULL, address = NULL,
    erased_at = $1, updated_at = $1 WHERE seq = $2`,
  forgetRecords: 'DELETE FROM idempotency_keys WHERE account_id = $1 AND body LIKE $2',
  retentionCandidates: `SELECT p.seq FROM applicants p WHERE p.erased_at IS NULL AND NOT EXISTS (SELECT 1 FROM applications a
      WHERE a.applicant_seq = p.seq AND (a.status IN ${OPEN_SQL} OR a.status = 'adopted' OR a.updated_at >= $1))
    ORDER BY p.seq LIMIT $2`,
} as const;
