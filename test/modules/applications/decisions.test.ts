/** The applications' rules (src/modules/applications/decisions.ts) without a database. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  applicationEvents,
  checkAnswers,
  checkForm,
  decideAction,
  decideOrderMove,
  decidePatch,
  decidePetRemoved,
  decideSubmit,
  eraseApplication,
  MAX_INFO_REQUESTS,
  retentionDue,
  type ApplicationRecord,
  type FormRecord,
} from '../../../src/modules/applications/decisions.js';
import type { Question } from '../../../src/modules/applications/schemas.js';

const T = Date.UTC(2026, 5, 15);
const QUESTIONS: Question[] = [
  { id: 'household', label: 'H', type: 'text', required: true, maxLength: 10 },
  { id: 'garden', label: 'G', type: 'boolean', required: true },
  { id: 'hours', label: 'N', type: 'number', required: false },
  { id: 'from', label: 'D', type: 'date', required: false },
  { id: 'home', label: 'C', type: 'choice', required: false, options: ['house', 'flat'] },
];
const FORM: FormRecord = { version: 3, questions: QUESTIONS, updatedAt: T };
const staff = { keyId: 'k_staff', accountId: 1, manager: true };
const owner = { keyId: 'k_owner', accountId: 2, manager: false };
const stranger = { keyId: 'k_x', accountId: 3, manager: false };

function app(over: Partial<ApplicationRecord> = {}): ApplicationRecord {
  return {
    seq: 1,
    id: 'app_1',
    accountId: 2,
    applicantSeq: 1,
    applicantId: 'apl_1',
    petId: 42,
    answers: { household: 'Two', garden: true },
    formVersion: 3,
    status: 'submitted',
    statusReason: null,
    message: null,
    orderId: null,
    history: [{ status: 'submitted', at: new Date(T).toISOString(), by: 'k_owner' }],
    version: 1,
    createdAt: T,
    updatedAt: T,
    ...over,
  };
}

describe('applications decisions', () => {
  test('answers: unknown, missing and mistyped answers are named by question, never by value', () => {
    assert.deepEqual(checkAnswers(QUESTIONS, { household: 'Two', garden: false }), []);
    const problems = checkAnswers(QUESTIONS, {
      household: 'far too long a text',
      garden: 'yes',
      hours: 'SecretValue',
      from: '2026-02-30',
      home: 'castle',
      extra: 1,
    });
    assert.deepEqual(problems.map((p) => p.field).sort(), [
      'answers.extra',
      'answers.from',
      'answers.garden',
      'answers.home',
      'answers.hours',
      'answers.household',
    ]);
    assert.ok(!JSON.stringify(problems).includes('SecretValue'));
    assert.deepEqual(
      checkAnswers(QUESTIONS, { garden: true }).map((p) => p.field),
      ['answers.household'],
    );
  });

  test('form: unique ids, options only and always for choices, maxLength only for text', () => {
    assert.deepEqual(checkForm(QUESTIONS), []);
    const fields = checkForm([
      { id: 'a', label: 'A', type: 'choice', required: true },
      { id: 'a', label: 'B', type: 'number', required: true, options: ['x'], maxLength: 3 },
    ]).map((p) => p.field);
    assert.deepEqual(fields, [
      'questions[0].options',
      'questions[1].id',
      'questions[1].options',
      'questions[1].maxLength',
    ]);
  });

  test('submit: answers first, then the pet, the open application, the limit', () => {
    const base = {
      form: FORM,
      answers: { household: 'x', garden: true },
      openForApplicant: 0,
      openForPet: false,
      max: 2,
    };
    assert.equal(decideSubmit({ ...base, petStatus: 'available' }), undefined);
    assert.equal(
      decideSubmit({ ...base, petStatus: 'pending' }),
      undefined,
      'a held pet may still be applied for',
    );
    assert.equal(decideSubmit({ ...base, answers: {}, petStatus: undefined })!.kind, 'invalid_answers');
    assert.deepEqual(decideSubmit({ ...base, petStatus: undefined }), {
      kind: 'pet_not_available',
      unknown: true,
    });
    assert.deepEqual(decideSubmit({ ...base, petStatus: 'sold' }), {
      kind: 'pet_not_available',
      unknown: false,
    });
    assert.deepEqual(decideSubmit({ ...base, petStatus: 'available', openForPet: true }), {
      kind: 'application_exists',
    });
    assert.deepEqual(decideSubmit({ ...base, petStatus: 'available', openForApplicant: 2 }), {
      kind: 'open_application_limit',
      limit: 2,
    });
  });

  test('actions: the table of moves, visibility, If-Match', () => {
    const now = T + 1000;
    assert.deepEqual(decideAction(app(), { action: 'review', actor: stranger, now }), { kind: 'not_found' });
    assert.deepEqual(decideAction(undefined, { action: 'review', actor: staff, now }), { kind: 'not_found' });
    assert.deepEqual(decideAction(app(), { action: 'review', actor: staff, ifMatch: (v) => v === 9, now }), {
      kind: 'precondition_failed',
      version: 1,
    });
    assert.deepEqual(decideAction(app(), { action: 'approve', actor: staff, now }), {
      kind: 'invalid_transition',
      status: 'submitted',
    });
    const reviewed = decideAction(app(), { action: 'review', actor: staff, now });
    assert.equal(reviewed.kind, 'move');
    if (reviewed.kind !== 'move') return;
    assert.equal(reviewed.after.status, 'in_review');
    assert.equal(reviewed.after.version, 2);
    assert.deepEqual(reviewed.after.history.at(-1), {
      status: 'in_review',
      at: new Date(now).toISOString(),
      by: 'k_staff',
    });
    const approve = decideAction(reviewed.after, { action: 'approve', actor: staff, now });
    assert.ok(approve.kind === 'move' && approve.placeOrder);
    const withdraw = decideAction(app({ status: 'approved', orderId: 7 }), {
      action: 'withdraw',
      actor: owner,
      now,
    });
    assert.ok(withdraw.kind === 'move' && withdraw.cancelOrder === 7);
    const reject = decideAction(app(), {
      action: 'reject',
      actor: staff,
      reason: 'duplicate',
      note: 'n',
      now,
    });
    assert.ok(reject.kind === 'move' && reject.after.statusReason === 'duplicate');
    for (const status of ['rejected', 'withdrawn', 'closed', 'adopted'] as const)
      for (const action of ['review', 'request-info', 'approve', 'reject', 'withdraw'] as const)
        assert.equal(decideAction(app({ status }), { action, actor: staff, now }).kind, 'invalid_transition');
  });

  test('request-info: at most MAX_INFO_REQUESTS per application, so its history stays readable', () => {
    const cycle = (n: number) =>
      Array.from({ length: n }, (_, i) => [
        { status: 'needs_info' as const, at: new Date(T + i).toISOString(), by: 'k_staff' },
        { status: 'in_review' as const, at: new Date(T + i).toISOString(), by: 'k_owner' },
      ]).flat();
    const now = T + 100;
    const below = app({ status: 'in_review', history: cycle(MAX_INFO_REQUESTS - 1) });
    assert.equal(
      decideAction(below, { action: 'request-info', actor: staff, message: 'm', now }).kind,
      'move',
    );
    const at = app({ status: 'in_review', history: cycle(MAX_INFO_REQUESTS) });
    assert.deepEqual(decideAction(at, { action: 'request-info', actor: staff, message: 'm', now }), {
      kind: 'info_request_limit',
      limit: MAX_INFO_REQUESTS,
    });
    // The ways out stay open.
    assert.equal(decideAction(at, { action: 'reject', actor: staff, reason: 'other', now }).kind, 'move');
  });

  test('patch: merges answers, only in submitted or needs_info, needs_info returns to in_review', () => {
    const patched = decidePatch(app(), FORM, {
      actor: owner,
      answers: { hours: 3, garden: null },
      now: T + 1,
    });
    assert.equal(patched.kind, 'invalid_answers', 'garden is required');
    const ok = decidePatch(app({ status: 'needs_info', message: 'm' }), FORM, {
      actor: owner,
      answers: { hours: 3 },
      now: T + 1,
    });
    assert.ok(ok.kind === 'patched');
    if (ok.kind !== 'patched') return;
    assert.deepEqual(ok.after.answers, { household: 'Two', garden: true, hours: 3 });
    assert.equal(ok.after.status, 'in_review');
    assert.equal(ok.after.formVersion, 3);
    assert.equal(
      decidePatch(app({ status: 'in_review' }), FORM, { actor: owner, now: T }).kind,
      'invalid_transition',
    );
  });

  test('automatic moves: delivery adopts and closes the rest; cancellation closes; removal closes', () => {
    const approved = app({ seq: 1, status: 'approved', orderId: 7 });
    const other = app({ seq: 2, id: 'app_2', status: 'in_review' });
    const ended = app({ seq: 3, id: 'app_3', status: 'rejected' });
    const delivered = decideOrderMove([approved, other, ended], { orderId: 7, to: 'delivered', now: T + 5 });
    assert.deepEqual(
      delivered.map((a) => [a.id, a.status, a.statusReason]),
      [
        ['app_1', 'adopted', null],
        ['app_2', 'closed', 'pet_adopted'],
      ],
    );
    const cancelled = decideOrderMove([approved, other], { orderId: 7, to: 'cancelled', now: T + 5 });
    assert.deepEqual(
      cancelled.map((a) => [a.id, a.status, a.statusReason]),
      [['app_1', 'closed', 'order_cancelled']],
    );
    assert.deepEqual(decideOrderMove([approved], { orderId: 8, to: 'cancelled', now: T }), []);
    assert.deepEqual(
      decidePetRemoved([other, ended], T).map((a) => [a.id, a.statusReason]),
      [['app_2', 'pet_removed']],
    );
  });

  test('erasure keeps statuses and the reason vocabulary, drops answers and free text', () => {
    const withText = app({
      status: 'needs_info',
      message: 'Ask Ada',
      history: [{ status: 'rejected', at: 'x', by: 'k', reason: 'moving to Paris', note: 'secret' }],
    });
    const { after, withdrawn } = eraseApplication(withText, T + 9, null);
    assert.equal(withdrawn, true);
    assert.equal(after.status, 'withdrawn');
    assert.equal(after.statusReason, 'erased');
    assert.equal(after.answers, null);
    assert.equal(after.message, null);
    assert.ok(!JSON.stringify(after).includes('Paris'));
    assert.ok(!JSON.stringify(after).includes('secret'));
  });

  test('events: submitted, then application.<status>; patch adds application.updated; no personal data', () => {
    const [submitted] = applicationEvents(undefined, app(), T);
    assert.equal(submitted!.type, 'application.submitted');
    const moved = applicationEvents(app(), app({ status: 'in_review', version: 2 }), T, true);
    assert.deepEqual(
      moved.map((e) => e.type),
      ['application.updated', 'application.in_review'],
    );
    const payload = JSON.parse(moved[1]!.payload);
    assert.deepEqual(payload.data.previous, { status: 'submitted' });
    assert.equal(payload.data.object.answers, undefined);
    assert.equal(payload.data.object.applicant, undefined);
    const free = applicationEvents(app(), app({ status: 'withdrawn', statusReason: 'moving abroad' }), T);
    assert.equal(JSON.parse(free[0]!.payload).data.object.statusReason, undefined, 'free text stays out');
  });

  test('retention: only when every application ended without adoption before the cut-off', () => {
    assert.equal(retentionDue([app({ status: 'rejected', updatedAt: T })], T + 1), true);
    assert.equal(retentionDue([app({ status: 'rejected', updatedAt: T })], T), false);
    assert.equal(retentionDue([app({ status: 'adopted', updatedAt: T })], T + 1), false);
    assert.equal(retentionDue([app({ status: 'submitted', updatedAt: T })], T + 1), false);
    assert.equal(retentionDue([], T), false);
  });
});
