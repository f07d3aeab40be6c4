/**
 * The applications' rules, once for both backends: each write's decision is a pure function of the rows
 * its store read (locked) and the request, returning the rows to write and the events to append, or the
 * refusal. The stores do I/O only.
 */
import type { PetStatus } from '../pets/index.js';
import type { ApplicationRecord, FormRecord } from './records.js';
import type { Answers, ApplicationStatus, HistoryEntry } from './schemas.js';
import { checkAnswers, type FieldProblem } from './answers.js';
import { STATUS_REASONS } from './events.js';

export const OPEN_STATUSES: readonly ApplicationStatus[] = [
  'submitted',
  'in_review',
  'needs_info',
  'approved',
];
export const isOpen = (status: ApplicationStatus): boolean => OPEN_STATUSES.includes(status);

/** An approval's order is staff's decision: the partners' MAX_OPEN_ORDERS does not apply to it. */
export const APPROVAL_ORDER_LIMIT = 1_000_000_000;

/**
 * Requests for information one application may receive. Each one and the answer to it add two history
 * entries, and the history is returned whole with the application: without a cap, a loop of requests and
 * answers would grow it past what a read can serialize (the schema states at most 1,000 entries).
 */
export const MAX_INFO_REQUESTS = 20;

/** The history an application starts with: submitted, now, by the submitting key. */
export function initialHistory(now: number, keyId: string | null): HistoryEntry[] {
  return [{ status: 'submitted', at: new Date(now).toISOString(), by: keyId }];
}

export type Action = 'review' | 'request-info' | 'approve' | 'reject' | 'withdraw';

/** Each action: the statuses it applies to and the one it reaches. */
export const ACTIONS: Record<Action, { from: readonly ApplicationStatus[]; to: ApplicationStatus }> = {
  review: { from: ['submitted'], to: 'in_review' },
  'request-info': { from: ['in_review'], to: 'needs_info' },
  approve: { from: ['in_review'], to: 'approved' },
  reject: { from: ['submitted', 'in_review', 'needs_info'], to: 'rejected' },
  withdraw: { from: ['submitted', 'in_review', 'needs_info', 'approved'], to: 'withdrawn' },
};

/** Who acts: the key (for history) and what it may see. */
export interface Actor {
  keyId: string | null;
  accountId: number;
  /** applications:manage: every account's applications. */
  manager: boolean;
}

export type Refusal =
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; version: number }
  | { kind: 'invalid_transition'; status: ApplicationStatus }
  | { kind: 'pet_not_available'; unknown: boolean }
  | { kind: 'open_application_limit'; limit: number }
  | { kind: 'application_exists' }
  | { kind: 'info_request_limit'; limit: number }
  | { kind: 'invalid_answers'; problems: FieldProblem[] };

/** Whether a new application may be submitted, given what was read under the locks. */
export function decideSubmit(input: {
  form: FormRecord;
  answers: Answers;
  petStatus: PetStatus | undefined;
  openForApplicant: number;
  openForPet: boolean;
  max: number;
}): Refusal | undefined {
  const problems = checkAnswers(input.form.questions, input.answers);
  if (problems.length > 0) return { kind: 'invalid_answers', problems };
  if (input.petStatus === undefined) return { kind: 'pet_not_available', unknown: true };
  if (input.petStatus === 'sold') return { kind: 'pet_not_available', unknown: false };
  if (input.openForPet) return { kind: 'application_exists' };
  if (input.openForApplicant >= input.max) return { kind: 'open_application_limit', limit: input.max };
  return undefined;
}

/** The application as visible to the actor; else not_found (another account's is never revealed). */
export function visible(app: ApplicationRecord | undefined, actor: Actor): app is ApplicationRecord {
  return app !== undefined && (actor.manager || app.accountId === actor.accountId);
}

/** A move to `to`: status, reason, history, version and time. */
export function moved(
  app: ApplicationRecord,
  to: ApplicationStatus,
  now: number,
  entry: { by: string | null; reason?: string; note?: string },
  changes: Partial<Pick<ApplicationRecord, 'statusReason' | 'message' | 'orderId'>> = {},
): ApplicationRecord {
  const history: HistoryEntry = { status: to, at: new Date(now).toISOString(), by: entry.by };
  if (entry.reason !== undefined) history.reason = entry.reason;
  if (entry.note !== undefined) history.note = entry.note;
  return {
    ...app,
    statusReason: null,
    ...changes,
    status: to,
    history: [...app.history, history],
    version: app.version + 1,
    updatedAt: now,
  };
}

export interface ActionRequest {
  action: Action;
  actor: Actor;
  ifMatch?: (version: number) => boolean;
  message?: string;
  reason?: string;
  note?: string;
  now: number;
}

export type ActionDecision =
  { kind: 'move'; after: ApplicationRecord; placeOrder: boolean; cancelOrder: number | null } | Refusal;

/** An action on an application read under its lock (approve's order is then placed by the store). */
export function decideAction(app: ApplicationRecord | undefined, request: ActionRequest): ActionDecision {
  if (!visible(app, request.actor)) return { kind: 'not_found' };
  if (request.ifMatch && !request.ifMatch(app.version))
    return { kind: 'precondition_failed', version: app.version };
  const move = ACTIONS[request.action];
  if (!move.from.includes(app.status)) return { kind: 'invalid_transition', status: app.status };
  const by = request.actor.keyId;
  switch (request.action) {
    case 'request-info':
      if (app.history.filter((entry) => entry.status === 'needs_info').length >= MAX_INFO_REQUESTS)
        return { kind: 'info_request_limit', limit: MAX_INFO_REQUESTS };
      return {
        kind: 'move',
        after: moved(app, move.to, request.now, { by }, { message: request.message ?? null }),
        placeOrder: false,
        cancelOrder: null,
      };
    case 'reject':
      return {
        kind: 'move',
        after: moved(
          app,
          move.to,
          request.now,
          { by, reason: request.reason, note: request.note },
          {
            statusReason: request.reason ?? null,
          },
        ),
        placeOrder: false,
        cancelOrder: null,
      };
    case 'withdraw':
      return {
        kind: 'move',
        after: moved(
          app,
          move.to,
          request.now,
          { by, reason: request.reason },
          {
            statusReason: request.reason ?? null,
          },
        ),
        placeOrder: false,
        cancelOrder: app.status === 'approved' ? app.orderId : null,
      };
    default:
      return {
        kind: 'move',
        after: moved(app, move.to, request.now, { by }),
        placeOrder: request.action === 'approve',
        cancelOrder: null,
      };
  }
}

export interface PatchRequest {
  actor: Actor;
  ifMatch?: (version: number) => boolean;
  answers?: Record<string, string | number | boolean | null>;
  now: number;
}

/**
 * A merge patch of the answers (null removes one), checked against the current form; the applicant's part is
 * applied by the store to the applicant row. From needs_info the application returns to in_review.
 */
export function decidePatch(
  app: ApplicationRecord | undefined,
  form: FormRecord,
  request: PatchRequest,
): { kind: 'patched'; after: ApplicationRecord } | Refusal {
  if (!visible(app, request.actor)) return { kind: 'not_found' };
  if (request.ifMatch && !request.ifMatch(app.version))
    return { kind: 'precondition_failed', version: app.version };
  if (app.status !== 'submitted' && app.status !== 'needs_info')
    return { kind: 'invalid_transition', status: app.status };
  const answers: Answers = { ...(app.answers ?? {}) };
  for (const [id, value] of Object.entries(request.answers ?? {})) {
    if (value === null) delete answers[id];
    else answers[id] = value;
  }
  const problems = checkAnswers(form.questions, answers);
  if (problems.length > 0) return { kind: 'invalid_answers', problems };
  const base = { ...app, answers, formVersion: form.version };
  const after =
    app.status === 'needs_info'
      ? moved(base, 'in_review', request.now, { by: request.actor.keyId }, { message: app.message })
      : { ...base, version: app.version + 1, updatedAt: request.now };
  return { kind: 'patched', after };
}

/**
 * What an order's move does to the applications of its pet (read under the order's locks): its delivery
 * adopts the application whose order it is and closes the pet's other open ones; a cancellation not made by
 * the application's own withdrawal closes the approved application holding it.
 */
export function decideOrderMove(
  apps: readonly ApplicationRecord[],
  move: { orderId: number; to: string; now: number },
): ApplicationRecord[] {
  const changed: ApplicationRecord[] = [];
  for (const app of apps) {
    if (!isOpen(app.status)) continue;
    if (move.to === 'delivered') {
      changed.push(
        app.orderId === move.orderId
          ? moved(app, 'adopted', move.now, { by: null })
          : moved(
              app,
              'closed',
              move.now,
              { by: null, reason: 'pet_adopted' },
              { statusReason: 'pet_adopted' },
            ),
      );
    } else if (move.to === 'cancelled' && app.orderId === move.orderId && app.status === 'approved') {
      changed.push(
        moved(
          app,
          'closed',
          move.now,
          { by: null, reason: 'order_cancelled' },
          { statusReason: 'order_cancelled' },
        ),
      );
    }
  }
  return changed;
}

/** The pet is gone: its open applications close. */
export function decidePetRemoved(apps: readonly ApplicationRecord[], now: number): ApplicationRecord[] {
  return apps
    .filter((app) => isOpen(app.status))
    .map((app) =>
      moved(app, 'closed', now, { by: null, reason: 'pet_removed' }, { statusReason: 'pet_removed' }),
    );
}

/**
 * Erasure of one application's personal data (answers, staff's message, free-text reasons and notes); an
 * open one is withdrawn first (`erased`). Statuses and dates stay, for statistics.
 */
export function eraseApplication(
  app: ApplicationRecord,
  now: number,
  by: string | null,
): { after: ApplicationRecord; withdrawn: boolean; cancelOrder: number | null } {
  const open = isOpen(app.status);
  const base = open
    ? moved(app, 'withdrawn', now, { by, reason: 'erased' }, { statusReason: 'erased' })
    : { ...app, version: app.version + 1, updatedAt: now };
  const keep = new Set<string>(STATUS_REASONS);
  const history = base.history.map((entry) => {
    // Free text (notes, withdrawal reasons) may say anything about the person: only the vocabulary stays.
    const kept: HistoryEntry = { status: entry.status, at: entry.at, by: entry.by };
    if (entry.reason !== undefined && keep.has(entry.reason)) kept.reason = entry.reason;
    return kept;
  });
  return {
    after: {
      ...base,
      answers: null,
      message: null,
      statusReason: base.statusReason !== null && keep.has(base.statusReason) ? base.statusReason : null,
      history,
    },
    withdrawn: open,
    cancelOrder: open && app.status === 'approved' ? app.orderId : null,
  };
}

/** Applicants erased by retention: every application ended without adoption before `before`. */
export function retentionDue(apps: readonly ApplicationRecord[], before: number): boolean {
  return (
    apps.length > 0 &&
    apps.every((app) => !isOpen(app.status) && app.status !== 'adopted' && app.updatedAt < before)
  );
}

export { checkAnswers, checkForm, type FieldProblem } from './answers.js';
export { applicationEvents, erasedEvent, eventObject, STATUS_REASONS } from './events.js';
export type { ApplicantRecord, ApplicationRecord, FormRecord } from './records.js';
