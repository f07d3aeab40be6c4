/**
 * Submissions on PostgreSQL. One submission alone is `submitAll` of one input in its own transaction. Those
 * of one turn of the event loop without an Idempotency-Key share one transaction and its statements
 * (TurnBatch and sharedThenAlone, db/turn-writes.ts), as the orders' placements do: the pets locked, the
 * applicants upserted, their open applications counted with the current form, the applications inserted and
 * their events appended, five statements for the whole turn; each is answered after that commit with its own
 * outcome. A refusal, or any failure (a race that the one-open index settles), rolls the shared transaction
 * back and the others run again alone, so each gets the answer it would have had alone and a refused
 * submission changes nothing (its applicant included).
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { TurnBatch } from '../../db/turn-batch.js';
import { sharedThenAlone } from '../../db/turn-writes.postgres.js';
import type { PostgresEventAppender } from '../events/index.js';
import { petsWithin } from '../pets/index.js';
import {
  applicationEvents,
  decideSubmit,
  initialHistory,
  type ApplicantRecord,
  type Refusal,
} from './decisions.js';
import { applicantFromRow, newApplicantId, newApplicationId, ParsedForm, submittedRecord } from './rows.js';
import { SQL } from './sql.postgres.js';
import type { SubmitInput, WriteOutcome } from './store.js';

type Row = Record<string, unknown>;

/** A refusal decided after a write began: rolls the transaction back, then answers. */
export class Refused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.kind);
  }
}

/** Who applies: one submission per applicant joins a shared transaction (its upsert locks one row once). */
const applicantKey = (input: SubmitInput): string =>
  `${input.accountId} ${input.applicant.email.toLowerCase()}`;

/**
 * The submissions, each decided against the rows as locked (pets, then applicants: the one order every
 * writer follows); a refusal is recorded in `failed` at its position and thrown (sharedThenAlone).
 */
export async function submitAll(
  client: PoolClient,
  events: PostgresEventAppender,
  forms: ParsedForm,
  inputs: readonly SubmitInput[],
  failed: Map<number, unknown>,
): Promise<WriteOutcome[]> {
  const pets = await petsWithin.postgresLock(
    client,
    inputs.map((input) => input.petId),
    'share',
  );
  const upserted = await client.query<Row>({
    name: 'applicants_upsert_all',
    text: SQL.upsertApplicants,
    values: [
      inputs.map(() => newApplicantId()),
      inputs.map((input) => input.accountId),
      inputs.map((input) => input.applicant.email.toLowerCase()),
      inputs.map((input) => input.applicant.name),
      inputs.map((input) => input.applicant.email),
      inputs.map((input) => input.applicant.phone ?? null),
      inputs.map((input) => (input.applicant.address ? JSON.stringify(input.applicant.address) : null)),
      inputs.map((input) => input.now),
    ],
  });
  const byKey = new Map<string, ApplicantRecord>(
    upserted.rows.map((row) => {
      const applicant = applicantFromRow(row);
      return [`${applicant.accountId} ${String(row.p_email_key)}`, applicant] as const;
    }),
  );
  const applicants = inputs.map((input) => byKey.get(applicantKey(input))!);
  const counted = await client.query<Row>({
    name: 'applications_open_counts',
    text: SQL.openCounts,
    values: [applicants.map((applicant) => applicant.seq), inputs.map((input) => input.petId)],
  });
  const form = forms.of(counted.rows[0]!);
  inputs.forEach((input, k) => {
    const counts = counted.rows[k]!;
    const refusal = decideSubmit({
      form,
      answers: input.answers,
      petStatus: pets.get(input.petId),
      openForApplicant: Number(counts.n),
      openForPet: Number(counts.pet) > 0,
      max: input.max,
    });
    if (refusal) {
      const error = new Refused(refusal);
      failed.set(k, error);
      throw error;
    }
  });
  const ids = inputs.map(() => newApplicationId());
  const histories = inputs.map((input) => initialHistory(input.now, input.keyId));
  const inserted = await client.query<{ id: string; seq: number }>({
    name: 'applications_insert_all',
    text: SQL.insertApplications,
    values: [
      ids,
      inputs.map((input) => input.accountId),
      applicants.map((applicant) => applicant.seq),
      inputs.map((input) => input.petId),
      inputs.map((input) => JSON.stringify(input.answers)),
      inputs.map(() => form.version),
      histories.map((history) => JSON.stringify(history)),
      inputs.map((input) => input.now),
    ],
  });
  const seqs = new Map(inserted.rows.map((row) => [row.id, Number(row.seq)]));
  const outcomes = inputs.map((input, k): WriteOutcome => {
    const applicant = applicants[k]!;
    const application = submittedRecord(
      seqs.get(ids[k]!)!,
      ids[k]!,
      input,
      applicant,
      form.version,
      histories[k]!,
    );
    return { kind: 'done', application: { application, applicant } };
  });
  await events.appendAll(
    client,
    outcomes.flatMap((outcome) =>
      outcome.kind === 'done'
        ? applicationEvents(
            undefined,
            outcome.application.application,
            outcome.application.application.createdAt,
          )
        : [],
    ),
  );
  return outcomes;
}

/** The turn's submissions without an Idempotency-Key: shared, then alone (see the top of this file). */
export function submissionBatch(
  db: PostgresDatabase,
  alone: (input: SubmitInput) => Promise<WriteOutcome>,
  shared: (
    client: PoolClient,
    inputs: SubmitInput[],
    failed: Map<number, unknown>,
  ) => Promise<WriteOutcome[]>,
): TurnBatch<SubmitInput, WriteOutcome> {
  return new TurnBatch((inputs: SubmitInput[]) => sharedThenAlone(db, inputs, alone, shared, applicantKey));
}

/** A batch's refusal, as the submission's outcome. */
export function refusedAsOutcome(error: unknown): WriteOutcome {
  if (error instanceof Refused) return error.refusal;
  throw error;
}
