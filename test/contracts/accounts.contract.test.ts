/**
 * The accounts and keys repository contract (src/modules/accounts/repository.ts) on every backend: plans and
 * quotas, bans, key creation, listing, lookup by hash, revocation, and two instances sharing a database.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { PLAN_QUOTAS } from '../../src/modules/accounts/quota.js';
import { contractSuite, DAY, T0 } from '../support/contract.js';

contractSuite('accounts', (target) => {
  let storage: Database;
  before(async () => {
    storage = await target.fresh();
  });

  describe('accounts', () => {
    test('a new account defaults to free; the plan changes on upsert and is kept when omitted', async () => {
      const before = await storage.repository(accountRepository).countAccounts();
      const created = await storage.repository(accountRepository).upsertAccount({ name: 'acme' }, T0);
      assert.deepEqual(created, {
        id: created.id,
        name: 'acme',
        plan: 'free',
        ...PLAN_QUOTAS.free,
        banLiftedAt: null,
      });
      assert.ok(Number.isSafeInteger(created.id) && created.id > 0);
      assert.equal(await storage.repository(accountRepository).countAccounts(), before + 1);

      const pro = await storage
        .repository(accountRepository)
        .upsertAccount({ name: 'acme', plan: 'pro' }, T0 + 1);
      assert.deepEqual(pro, { ...created, plan: 'pro', ...PLAN_QUOTAS.pro });
      assert.deepEqual(
        await storage.repository(accountRepository).upsertAccount({ name: 'acme' }, T0 + 2),
        pro,
      );
      assert.deepEqual(await storage.repository(accountRepository).findAccount('acme'), pro);
      assert.equal(await storage.repository(accountRepository).countAccounts(), before + 1);
    });

    test('enterprise quotas are custom and survive upserts that omit them', async () => {
      const ent = await storage
        .repository(accountRepository)
        .upsertAccount({ name: 'bigco', plan: 'enterprise', perMinute: 5000, perDay: 9_000_000 }, T0);
      assert.equal(ent.plan, 'enterprise');
      assert.deepEqual([ent.perMinute, ent.perDay], [5000, 9_000_000]);
      assert.deepEqual(await storage.repository(accountRepository).upsertAccount({ name: 'bigco' }, T0), ent);
      assert.deepEqual(
        await storage.repository(accountRepository).upsertAccount({ name: 'bigco', perDay: 10_000_000 }, T0),
        {
          ...ent,
          perDay: 10_000_000,
        },
      );
      // Leaving enterprise applies the fixed plan's quotas.
      assert.deepEqual(
        await storage.repository(accountRepository).upsertAccount({ name: 'bigco', plan: 'business' }, T0),
        {
          ...ent,
          plan: 'business',
          ...PLAN_QUOTAS.business,
        },
      );
      // Entering enterprise without numbers starts from business quotas.
      const plain = await storage
        .repository(accountRepository)
        .upsertAccount({ name: 'newent', plan: 'enterprise' }, T0);
      assert.deepEqual(
        [plain.perMinute, plain.perDay],
        [PLAN_QUOTAS.business.perMinute, PLAN_QUOTAS.business.perDay],
      );
    });

    test('concurrent upserts of one new account create it once', async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          storage.repository(accountRepository).upsertAccount({ name: 'racer', plan: 'pro' }, T0),
        ),
      );
      assert.equal(new Set(results.map((a) => a.id)).size, 1);
      assert.deepEqual(await storage.repository(accountRepository).findAccount('racer'), results[0]);
    });

    test('findAccount of an unknown name is undefined', async () => {
      assert.equal(await storage.repository(accountRepository).findAccount('nobody-here'), undefined);
    });

    test('liftBan records the time, and answers false for an unknown account', async () => {
      await storage.repository(accountRepository).upsertAccount({ name: 'banned' }, T0);
      assert.equal(await storage.repository(accountRepository).liftBan('banned', T0 + 5), true);
      assert.equal((await storage.repository(accountRepository).findAccount('banned'))?.banLiftedAt, T0 + 5);
      assert.equal(await storage.repository(accountRepository).liftBan('nobody-here', T0), false);
    });
  });

  describe('keys', () => {
    let accountId: number;
    before(async () => {
      accountId = (
        await storage.repository(accountRepository).upsertAccount({ name: 'keyholder', plan: 'pro' }, T0)
      ).id;
      await storage.repository(accountRepository).upsertAccount({ name: 'keyless' }, T0);
    });

    test('create, list, find by hash', async () => {
      await storage
        .repository(accountRepository)
        .createKey(accountId, { id: 'key_b', hash: 'hash-b', hint: 'pas_bbb…', expiresAt: null }, T0 + 2);
      await storage
        .repository(accountRepository)
        .createKey(
          accountId,
          { id: 'key_a', hash: 'hash-a', hint: 'pas_aaa…', expiresAt: T0 + DAY, scopes: ['pets:read'] },
          T0 + 1,
        );
      await storage
        .repository(accountRepository)
        .createKey(accountId, { id: 'key_C', hash: 'hash-c', hint: 'pas_ccc…', expiresAt: null }, T0 + 2);
      const listed = await storage.repository(accountRepository).listKeys('keyholder');
      assert.deepEqual(listed, [
        {
          id: 'key_a',
          account: 'keyholder',
          hint: 'pas_aaa…',
          createdAt: T0 + 1,
          expiresAt: T0 + DAY,
          revokedAt: null,
          scopes: ['pets:read'],
        },
        // Same creation time: ordered by id, byte-wise (upper case first).
        {
          id: 'key_C',
          account: 'keyholder',
          hint: 'pas_ccc…',
          createdAt: T0 + 2,
          expiresAt: null,
          revokedAt: null,
          scopes: null,
        },
        {
          id: 'key_b',
          account: 'keyholder',
          hint: 'pas_bbb…',
          createdAt: T0 + 2,
          expiresAt: null,
          revokedAt: null,
          scopes: null,
        },
      ]);
      assert.deepEqual(await storage.repository(accountRepository).listKeys('keyless'), []);
      assert.deepEqual(await storage.repository(accountRepository).listKeys('nobody-here'), []);
      const everything = await storage.repository(accountRepository).listKeys();
      assert.ok(listed.every((k) => everything.some((e) => e.id === k.id)));

      const principal = await storage.repository(accountRepository).findKeyByHash('hash-a');
      assert.deepEqual(principal, {
        keyId: 'key_a',
        expiresAt: T0 + DAY,
        revokedAt: null,
        scopes: new Set(['pets:read']),
        account: await storage.repository(accountRepository).findAccount('keyholder'),
      });
      assert.equal(await storage.repository(accountRepository).findKeyByHash('no-such-hash'), undefined);
    });

    test('findKeyByHash sees plan changes and lifted bans at once', async () => {
      await storage
        .repository(accountRepository)
        .createKey(accountId, { id: 'key_plan', hash: 'hash-plan', hint: 'pas_ppp…', expiresAt: null }, T0);
      await storage.repository(accountRepository).upsertAccount({ name: 'keyholder', plan: 'business' }, T0);
      await storage.repository(accountRepository).liftBan('keyholder', T0 + 9);
      const principal = await storage.repository(accountRepository).findKeyByHash('hash-plan');
      assert.equal(principal?.account.plan, 'business');
      assert.equal(principal?.account.perMinute, PLAN_QUOTAS.business.perMinute);
      assert.equal(principal?.account.banLiftedAt, T0 + 9);
    });

    test('concurrent lookups each get their own key, and a revocation by another instance applies to the next one', async () => {
      const { a, b, close } = await target.createPair();
      try {
        await a.migrate();
        await b.migrate();
        const account = await a.repository(accountRepository).upsertAccount({ name: 'pair' }, T0);
        const hashes = Array.from({ length: 10 }, (_, i) => `pair-hash-${i}`);
        for (const [i, hash] of hashes.entries()) {
          await a
            .repository(accountRepository)
            .createKey(account.id, { id: `key_pair_${i}`, hash, hint: 'pas_…', expiresAt: null }, T0);
        }
        const found = await Promise.all(
          [...hashes, 'pair-missing'].map((h) => a.repository(accountRepository).findKeyByHash(h)),
        );
        assert.deepEqual(
          found.map((p) => p?.keyId),
          [...hashes.map((_, i) => `key_pair_${i}`), undefined],
        );
        // Instance a has now seen (and may remember) key 3; b revokes it, as the CLI would.
        assert.equal(await b.repository(accountRepository).revokeKey('key_pair_3', T0 + 5), true);
        const after = await Promise.all(hashes.map((h) => a.repository(accountRepository).findKeyByHash(h)));
        assert.deepEqual(
          after.map((p) => p?.revokedAt),
          hashes.map((_, i) => (i === 3 ? T0 + 5 : null)),
        );
      } finally {
        await close();
      }
    });

    test('revokeKey keeps the first revocation time and answers false for unknown keys', async () => {
      await storage
        .repository(accountRepository)
        .createKey(accountId, { id: 'key_rev', hash: 'hash-rev', hint: 'pas_rrr…', expiresAt: null }, T0);
      assert.equal(await storage.repository(accountRepository).revokeKey('key_rev', T0 + 100), true);
      assert.equal(
        (await storage.repository(accountRepository).findKeyByHash('hash-rev'))?.revokedAt,
        T0 + 100,
      );
      assert.equal(await storage.repository(accountRepository).revokeKey('key_rev', T0 + 200), true);
      assert.equal(
        (await storage.repository(accountRepository).findKeyByHash('hash-rev'))?.revokedAt,
        T0 + 100,
      );
      assert.equal(
        (await storage.repository(accountRepository).listKeys('keyholder')).find((k) => k.id === 'key_rev')
          ?.revokedAt,
        T0 + 100,
      );
      assert.equal(await storage.repository(accountRepository).revokeKey('key_nope', T0), false);
    });
  });
});
