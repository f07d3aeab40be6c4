/** The webhooks' rules without a database: when a finished attempt disables its endpoint. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { disableReason } from '../../../src/modules/webhooks/decisions.js';

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
