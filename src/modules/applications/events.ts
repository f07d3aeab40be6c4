/** The events of applications' changes: ids and statuses only, never personal data. */
import { buildEvent, type NewEvent } from '../events/index.js';
import type { ApplicantRecord, ApplicationRecord } from './records.js';
import type { ApplicationEventObject } from './schemas.js';

/** Reasons from the service's own vocabulary: the only ones events carry (free text may be personal). */
export const STATUS_REASONS = [
  'unsuitable',
  'incomplete',
  'duplicate',
  'other',
  'pet_adopted',
  'order_cancelled',
  'pet_removed',
  'erased',
] as const;

/** What events carry of an application: ids and statuses. */
export function eventObject(app: ApplicationRecord): ApplicationEventObject {
  const object: ApplicationEventObject = {
    id: app.id,
    petId: app.petId,
    applicantId: app.applicantId,
    formVersion: app.formVersion,
    status: app.status,
    createdAt: new Date(app.createdAt).toISOString(),
    updatedAt: new Date(app.updatedAt).toISOString(),
  };
  if (app.statusReason !== null && (STATUS_REASONS as readonly string[]).includes(app.statusReason))
    object.statusReason = app.statusReason;
  if (app.orderId !== null) object.orderId = app.orderId;
  return object;
}

/**
 * The events of a change: application.submitted for a new one; application.updated for a patch (and the
 * status it reached, if it moved); application.<status> for every status reached.
 */
export function applicationEvents(
  before: ApplicationRecord | undefined,
  after: ApplicationRecord,
  now: number,
  patched = false,
): NewEvent[] {
  const object = eventObject(after);
  const change = (previous: Record<string, unknown>) => ({ object, previous, version: after.version });
  if (!before) return [buildEvent('application.submitted', change({}), now, after.accountId)];
  const events: NewEvent[] = [];
  const previous: Record<string, unknown> = {};
  if (before.status !== after.status) previous.status = before.status;
  if (before.orderId !== after.orderId) previous.orderId = before.orderId ?? null;
  if (patched) events.push(buildEvent('application.updated', change(previous), now, after.accountId));
  if (before.status !== after.status)
    events.push(
      buildEvent(`application.${after.status}` as NewEvent['type'], change(previous), now, after.accountId),
    );
  return events;
}

export function erasedEvent(applicant: ApplicantRecord, now: number): NewEvent {
  return buildEvent(
    'applicant.erased',
    { object: { id: applicant.id, erasedAt: new Date(now).toISOString() }, version: 1 },
    now,
    applicant.accountId,
  );
}
