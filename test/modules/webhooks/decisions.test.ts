/** The webhooks' rules without a database: when a finished attempt disables its endpoint, what endpoint writes store. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  attemptRecord,
  DISABLED_BY_ACCOUNT,
  disableReason,
  endpointCreation,
  endpointUpdate,
} from '../../../src/modules/webhooks/decisions.js';

const DAYS_3 = 3 * 24 * 3600_000;
const now = Date.UTC(2026, 5, 15);

describe('webhooks decisions', () => {
  test('a 410 disables at once; failures disable once the streak is as old as the limit, not before', () => {
    assert.equal(
      disableReason({ gone: true, failingSince: null, now, disableAfterMs: DAYS_3 }),
      'the receiver answered 410 Gone',
    );
    assert.equal(disableReason({ gone: false, failingSince: null, now, disableAfterMs: DAYS_3 }), null);
    assert.equal(disableReason({ gone: false, failingSince: undefined, now, disableAfterMs: DAYS_3 }), null);
    assert.equal(
      disableReason({ gone: false, failingSince: now - DAYS_3 + 1, now, disableAfterMs: DAYS_3 }),
      null,
    );
    assert.equal(
      disableReason({ gone: false, failingSince: now - DAYS_3, now, disableAfterMs: DAYS_3 }),
      'deliveries failed for 3 days',
    );
  });
});

describe('webhook endpoint writes', () => {
  const endpoint = {
    url: 'https://hooks.example/a',
    events: ['pet.created', 'order.placed', 'pet.created'],
    secret: 'whsec_x',
    ordersManage: true,
    grantedScopes: ['pets:read', 'events:read'],
  };

  test('creating is refused at the limit; below it, the row stores the events once each and the grant sorted', () => {
    assert.deepEqual(endpointCreation(16, 16, endpoint, now), { kind: 'limit', limit: 16 });
    assert.deepEqual(endpointCreation(17, 16, endpoint, now), { kind: 'limit', limit: 16 });
    assert.deepEqual(endpointCreation(15, 16, endpoint, now), {
      kind: 'insert',
      row: {
        url: 'https://hooks.example/a',
        events: 'pet.created order.placed',
        secret: 'whsec_x',
        ordersManage: 1,
        grantedScopes: 'events:read pets:read',
        createdAt: now,
        updatedAt: now,
      },
    });
    const own = endpointCreation(0, 16, { ...endpoint, ordersManage: false, grantedScopes: [] }, now);
    assert.equal(own.kind === 'insert' && own.row.ordersManage, 0);
    assert.equal(own.kind === 'insert' && own.row.grantedScopes, '');
  });

  test('turning an endpoint off records why and keeps its failing streak; on clears both', () => {
    const off = endpointUpdate({ enabled: false }, now);
    assert.equal(off.enabled, 0);
    assert.equal(off.setReason, 1);
    assert.equal(off.disabledReason, DISABLED_BY_ACCOUNT);
    assert.equal(off.clearFailingSince, 0);
    const on = endpointUpdate({ enabled: true }, now);
    assert.equal(on.enabled, 1);
    assert.equal(on.setReason, 1);
    assert.equal(on.disabledReason, null);
    assert.equal(on.clearFailingSince, 1, 're-enabled, it gets its full 3 days again');
  });

  test('a change that does not name `enabled` keeps the state, the reason and the streak; null keeps a column', () => {
    const moved = endpointUpdate(
      { url: 'https://hooks.example/b', events: ['*'], grantedScopes: ['pets:read'] },
      now,
    );
    assert.deepEqual(moved, {
      url: 'https://hooks.example/b',
      events: '*',
      grantedScopes: 'pets:read',
      enabled: null,
      setReason: 0,
      disabledReason: null,
      clearFailingSince: 0,
      updatedAt: now,
    });
    const nothing = endpointUpdate({}, now);
    assert.deepEqual(
      [nothing.url, nothing.events, nothing.grantedScopes, nothing.enabled],
      [null, null, null, null],
    );
  });

  test('an attempt: a success is final; a failure stays pending until the schedule has no attempt left', () => {
    assert.deepEqual(attemptRecord({ kind: 'succeeded', statusCode: 204 }), {
      status: 'succeeded',
      nextAttemptAt: null,
      statusCode: 204,
      error: null,
    });
    const failure = { kind: 'failed' as const, statusCode: 500, error: 'http_500', gone: false };
    assert.deepEqual(attemptRecord({ ...failure, nextAttemptAt: now + 60_000 }), {
      status: 'pending',
      nextAttemptAt: now + 60_000,
      statusCode: 500,
      error: 'http_500',
    });
    assert.equal(attemptRecord({ ...failure, nextAttemptAt: null }).status, 'failed');
  });
});
