/**
 * What an idempotent write stores and comes to, shared by the records' storage (repository*.ts here) and the
 * module repositories that run writes through it. The HTTP side (header, replay, refusals) is
 * src/http/idempotency.
 */
/** How long an Idempotency-Key is remembered per account. */
export const IDEMPOTENCY_RETENTION_MS = 24 * 3600 * 1000;

export interface IdempotencyInput {
  accountId: number;
  /** The operation (its operationId): the same key on two operations names two records. */
  operation: string;
  key: string;
  /** Hash of the canonical request body; a different body under the same key is a client error. */
  fingerprint: string;
  /** Records older than this (epoch ms) are treated as absent. */
  notBefore: number;
  now: number;
  /**
   * Whether this request may be answered with the stored response; when false the request runs as if it
   * carried no key. Absent: any request that passed the route's scope check may.
   */
  mayReplay?: (recorded: Recorded) => boolean;
}

/** What a write under an idempotency key came to. */
export type Idempotent<T> =
  | { kind: 'done'; value: T }
  | { kind: 'replayed'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_progress' };

/** How a repository answers a write it refused for its idempotency key. */
export type IdempotencyRefusal = { kind: 'idempotency_mismatch' } | { kind: 'idempotency_in_progress' };

/** A write answered again from its record: the recorded status and body (`B`: what that write records). */
export interface Replayed<B = unknown> {
  kind: 'replayed';
  status: number;
  body: B;
}

/**
 * An idempotent write's outcome in a repository's result vocabulary: the write's own result, the recorded
 * response to answer again (as recorded, or as `replay` makes it when a repository replays less than the
 * record, e.g. an id to read again), or the refusal.
 */
export function settleIdempotent<T, B = unknown>(
  outcome: Idempotent<T>,
): T | Replayed<B> | IdempotencyRefusal;
export function settleIdempotent<T, R>(
  outcome: Idempotent<T>,
  replay: (status: number, body: unknown) => R,
): T | R | IdempotencyRefusal;
export function settleIdempotent<T, R>(
  outcome: Idempotent<T>,
  replay: (status: number, body: unknown) => R = (status, body) => ({ kind: 'replayed', status, body }) as R,
): T | R | IdempotencyRefusal {
  switch (outcome.kind) {
    case 'done':
      return outcome.value;
    case 'replayed':
      return replay(outcome.status, outcome.body);
    case 'mismatch':
      return { kind: 'idempotency_mismatch' };
    case 'in_progress':
      return { kind: 'idempotency_in_progress' };
  }
}

/** The response a successful write records, to be replayed byte for byte. */
export interface Recorded {
  status: number;
  body: unknown;
}

/** Whether `input`'s request may be answered with `recorded` (see IdempotencyInput.mayReplay). */
export function replayAllowed(input: IdempotencyInput, recorded: Recorded): boolean {
  return input.mayReplay === undefined || input.mayReplay(recorded);
}

/** What a stored record (if any) means for `input` before its write runs (IdempotencyRepository.peek). */
export function peekRecord(
  input: IdempotencyInput,
  row: { fingerprint: string; status: number; body: string; createdAt: number } | undefined,
): { kind: 'replayed'; status: number; body: unknown } | { kind: 'mismatch' } | undefined {
  if (!row || row.createdAt < input.notBefore) return undefined;
  if (row.fingerprint !== input.fingerprint) return { kind: 'mismatch' };
  const recorded = { status: row.status, body: JSON.parse(row.body) as unknown };
  return replayAllowed(input, recorded) ? { kind: 'replayed', ...recorded } : undefined;
}
