/**
 * The applications' storage: the narrow I/O interface the decisions (decisions.ts) need, implemented once per
 * backend (store.sqlite.ts, store.postgres.ts) with the SQL and row mapping they share here.
 * test/contracts/applications.contract.test.ts holds both to it:
 *
 * - Every write is one transaction with its events (and its idempotency record, whose stored body holds only
 *   ids: replays re-read the application, so no personal data is kept in idempotency records).
 * - `submit` finds the applicant again by (account, lower(email)), updating the fields given; one open
 *   application per applicant and pet (a partial unique index makes races exact) and at most `max` open per
 *   applicant (counted under the applicant's row lock).
 * - `act` on `approve` places the store order in the same transaction (the pet must be available);
 *   `withdraw` of an approved application cancels its order. Order moves and pet removals made elsewhere
 *   reach the applications through the orders' and pets' within-transaction listeners.
 * - On PostgreSQL every write that may touch a pet's order takes the pet's row lock first, as order writes
 *   do, then the application's: pets → orders → applications, one order for all, so none can deadlock.
 * - `erase` clears the applicant's personal data, their applications' answers and free text and the
 *   idempotency records of their applications; open applications are withdrawn (`erased`). Repeatable.
 * - `readVersion` labels list pages for the exact page cache, with the promises of src/http/page-cache.ts:
 *   never newer than the data a list started after it reads, and moved by every write of applications or
 *   applicants that answered before the request arrived, on any instance (undefined: nothing cached).
 */
import type { IdempotencyInput } from '../../db/idempotency/records.js';
import type {
  ActionRequest,
  ApplicantRecord,
  ApplicationRecord,
  FormRecord,
  PatchRequest,
  Refusal,
} from './decisions.js';
import type { ApplicantInput, ApplicantPatch, Answers, ApplicationStatus, Question } from './schemas.js';

/** An application with its applicant, as the API shows it. */
export interface FullApplication {
  application: ApplicationRecord;
  applicant: ApplicantRecord;
}

export type Replayable<T> =
  | T
  | { kind: 'replayed'; status: number; id: string | null }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

export interface SubmitInput {
  accountId: number;
  petId: number;
  applicant: ApplicantInput;
  answers: Answers;
  keyId: string;
  max: number;
  now: number;
}

export type WriteOutcome = { kind: 'done'; application: FullApplication } | Refusal;

export interface ActInput {
  id: string;
  request: ActionRequest;
}

export interface PatchInput {
  id: string;
  request: PatchRequest;
  applicant?: ApplicantPatch;
}

export interface ListQuery {
  accountId?: number;
  statuses?: ApplicationStatus[];
  petId?: number;
  applicantId?: string;
  sort: 'newest' | 'oldest';
  /** Keyset position (seq) of the last row of the previous page. */
  after?: number;
  limit: number;
}

export interface ApplicationStore {
  form(): Promise<FormRecord>;
  putForm(
    questions: Question[],
    ifMatch: ((version: number) => boolean) | undefined,
    now: number,
  ): Promise<{ kind: 'done'; form: FormRecord } | { kind: 'precondition_failed'; version: number }>;
  submit(input: SubmitInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>>;
  patch(input: PatchInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>>;
  act(input: ActInput, idempotency?: IdempotencyInput): Promise<Replayable<WriteOutcome>>;
  get(id: string): Promise<FullApplication | undefined>;
  list(query: ListQuery): Promise<FullApplication[]>;
  readVersion(): string | undefined;
  applicant(id: string): Promise<ApplicantRecord | undefined>;
  /** The applicant's applications, oldest first (at most MAX_EXPORTED). */
  applicationsOf(applicantSeq: number): Promise<ApplicationRecord[]>;
  erase(
    input: { id: string; keyId: string | null; now: number },
    idempotency?: IdempotencyInput,
  ): Promise<Replayable<{ kind: 'erased' } | { kind: 'not_found' }>>;
  /** Erases applicants whose applications all ended without adoption before `before`; returns how many. */
  eraseExpired(before: number, now: number, batch?: number): Promise<number>;
}
