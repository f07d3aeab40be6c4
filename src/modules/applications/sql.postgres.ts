/** The PostgreSQL store's statements (store.postgres.ts). */
import {
  APPLICANT_COLUMNS,
  APPLICANT_RETURNING,
  APPLICATION_COLUMNS,
  FROM,
  MAX_EXPORTED,
  OPEN_SQL,
} from './rows.js';

const SELECT = `SELECT ${APPLICATION_COLUMNS}, ${APPLICANT_COLUMNS} ${FROM}`;

export const SQL = {
  form: 'SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1',
  lockForm:
    'SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1 FOR UPDATE',
  insertForm: 'INSERT INTO application_forms (version, questions, updated_at) VALUES ($1, $2, $3)',
  byId: `${SELECT} WHERE a.id = $1`,
  petOf: 'SELECT pet_id FROM applications WHERE id = $1',
  lockById: `${SELECT} WHERE a.id = $1 FOR UPDATE OF a`,
  petsOf: 'SELECT pet_id FROM applications WHERE id = ANY($1::text[])',
  lockByIds: `${SELECT} WHERE a.id = ANY($1::text[]) ORDER BY a.seq FOR UPDATE OF a`,
  bySeq: `${SELECT} WHERE a.seq = $1`,
  lockOpenOfPets: `${SELECT} WHERE a.pet_id = ANY($1::bigint[]) AND a.status IN ${OPEN_SQL} ORDER BY a.seq FOR UPDATE OF a`,
  lockOfApplicant: `${SELECT} WHERE a.applicant_seq = $1 ORDER BY a.seq LIMIT ${MAX_EXPORTED} FOR UPDATE OF a`,
  ofApplicant: `${SELECT} WHERE a.applicant_seq = $1 ORDER BY a.seq LIMIT ${MAX_EXPORTED}`,
  applicantById: `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.id = $1`,
  lockApplicant: `SELECT ${APPLICANT_COLUMNS} FROM applicants p WHERE p.seq = $1 FOR UPDATE`,
  // The applicants of a batch of submissions (one row each: the batch keeps one submission per applicant),
  // in (account, email) order so concurrent batches take their row locks in one order and cannot deadlock.
  // Takes (or waits for) each applicant's row lock: concurrent submissions of one applicant serialise here.
  upsertApplicants: `INSERT INTO applicants (id, account_id, email_key, name, email, phone, address, consent_at, created_at, updated_at)
    SELECT u.id, u.account_id, u.email_key, u.name, u.email, u.phone, u.address, u.at, u.at, u.at
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
      AS u(id, account_id, email_key, name, email, phone, address, at)
    ORDER BY u.account_id, u.email_key
    ON CONFLICT (account_id, email_key) DO UPDATE SET name = excluded.name, email = excluded.email,
      phone = coalesce(excluded.phone, applicants.phone), address = coalesce(excluded.address, applicants.address),
      consent_at = excluded.consent_at, updated_at = excluded.updated_at
    RETURNING email_key AS p_email_key, ${APPLICANT_RETURNING}`,
  // Each applicant's open applications (all, and for the pet), after their row locks; with the current form.
  openCounts: `SELECT q.k, (SELECT count(*)::int FROM applications a
        WHERE a.applicant_seq = q.seq AND a.status IN ${OPEN_SQL}) AS n,
      (SELECT count(*)::int FROM applications a
        WHERE a.applicant_seq = q.seq AND a.pet_id = q.pet AND a.status IN ${OPEN_SQL}) AS pet,
      f.version, f.questions, f.updated_at
    FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS q(seq, pet, k)
    CROSS JOIN (SELECT version, questions, updated_at FROM application_forms ORDER BY version DESC LIMIT 1) f
    ORDER BY q.k`,
  insertApplications: `INSERT INTO applications (id, account_id, applicant_seq, pet_id, answers, form_version, status,
      history, created_at, updated_at)
    SELECT u.id, u.account_id, u.applicant_seq, u.pet_id, u.answers, u.form_version, 'submitted', u.history, u.at, u.at
    FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[], $7::text[],
      $8::bigint[]) WITH ORDINALITY AS u(id, account_id, applicant_seq, pet_id, answers, form_version, history, at, n)
    ORDER BY u.n
    RETURNING id, seq`,
  updateApplication: `UPDATE applications SET answers = $1, form_version = $2, status = $3, status_reason = $4,
    message = $5, order_id = $6, history = $7, version = $8, updated_at = $9 WHERE seq = $10`,
  // UPDATE_APPLICATION for several rows, each column an array in updateValues' order.
  updateApplications: `UPDATE applications a SET answers = u.answers, form_version = u.form_version, status = u.status,
    status_reason = u.status_reason, message = u.message, order_id = u.order_id, history = u.history,
    version = u.version, updated_at = u.updated_at
    FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::bigint[],
      $9::bigint[], $10::bigint[]) AS u(answers, form_version, status, status_reason, message, order_id, history,
      version, updated_at, seq)
    WHERE a.seq = u.seq`,
  patchApplicant: 'UPDATE applicants SET name = $1, phone = $2, address = $3, updated_at = $4 WHERE seq = $5',
  eraseApplicant: `UPDATE applicants SET name = NULL, email = NULL, email_key = NULL, phone = NULL, address = NULL,
    erased_at = $1, updated_at = $1 WHERE seq = $2`,
  forgetRecords: 'DELETE FROM idempotency_keys WHERE account_id = $1 AND body LIKE $2',
  retentionCandidates: `SELECT p.seq FROM applicants p WHERE p.erased_at IS NULL AND NOT EXISTS (SELECT 1 FROM applications a
      WHERE a.applicant_seq = p.seq AND (a.status IN ${OPEN_SQL} OR a.status = 'adopted' OR a.updated_at >= $1))
    ORDER BY p.seq LIMIT $2`,
} as const;
