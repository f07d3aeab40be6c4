/**
 * Search folding, on every backend: compatibility forms (NFKC), accents and case are folded alike when a
 * pet's words are indexed and when `q` is read; both backends fold exactly as src/db/fold.ts does; the
 * migration that introduced the folding re-indexes rows indexed before it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { foldText } from '../src/db/fold.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { SETTINGS } from './support/fuzz.js';
import { backendOf, rawQuery, rerunMigration } from './support/raw-sql.js';
import { assertV1Error } from './support/assertions.js';

/** Text from the scripts and forms folding is about: Latin with accents, fullwidth, Greek, Cyrillic, ligatures. */
const foldable = fc.string({
  unit: fc
    .oneof(
      fc.integer({ min: 0x20, max: 0x24f }),
      fc.integer({ min: 0x300, max: 0x36f }),
      fc.integer({ min: 0x370, max: 0x3ff }),
      fc.integer({ min: 0x400, max: 0x4ff }),
      fc.integer({ min: 0x1e00, max: 0x1eff }),
      fc.integer({ min: 0xfb00, max: 0xfb06 }),
      fc.integer({ min: 0xff01, max: 0xff5e }),
      fc.constantFrom(0x130, 0x131, 0x3a3, 0x2160, 0x2460, 0x3300, 0xac00, 0x1100, 0x1161),
    )
    .map((c) => String.fromCodePoint(c)),
  maxLength: 30,
});

test('foldText: fullwidth, accents, case and ligatures fold to the plain word; idempotent', () => {
  assert.equal(foldText('ｒｅｘ'), 'rex');
  assert.equal(foldText('ＲＥＸ'), 'rex');
  assert.equal(foldText('Rèx'), 'rex');
  assert.equal(foldText('ﬁne'), 'fine');
  assert.equal(foldText('Straße'), 'strasse');
  assert.equal(foldText('ΟΔΟΣ'), 'οδοσ');
  assert.equal(foldText('İstanbul'), 'istanbul');
  assert.equal(foldText('Søren Łukasz'), 'soren lukasz');
  assert.equal(foldText('한국'), '한국');
  fc.assert(
    fc.property(foldable, (text) => foldText(foldText(text)) === foldText(text)),
    SETTINGS,
  );
});

for (const backend of await backends()) {
  describe(`search folding [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    const ids: Record<string, number> = {};

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'shelter' }));
      for (const [name, profile] of [
        ['Rex', undefined],
        ['Ｌｕｎａ', undefined],
        ['Bello', { breed: 'Straße-Hund', description: 'A ﬁne dog from Ærø.' }],
        ['Zoë', { breed: 'ＣＯＬＬＩＥ' }],
      ] as const) {
        const res = await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(key),
          payload: { name, categoryId: 1 },
        });
        assert.equal(res.statusCode, 201, res.body);
        ids[name] = res.json().id;
        if (profile) {
          const put = await ctx.app.inject({
            method: 'PUT',
            url: `/v1/pets/${ids[name]}/profile`,
            headers: bearer(key),
            payload: profile,
          });
          assert.equal(put.statusCode, 200, put.body);
        }
      }
    });
    after(() => ctx.close());

    async function found(q: string): Promise<number[]> {
      const res = await ctx.app.inject({
        url: `/v1/listings?q=${encodeURIComponent(q)}`,
        headers: bearer(key),
      });
      assert.equal(res.statusCode, 200, `${q}: ${res.body}`);
      return res.json<{ pet: { id: number } }[]>().map((l) => l.pet.id);
    }

    test('compatibility forms, accents and case find their plain twins, both ways', async () => {
      assert.deepEqual(await found('ｒｅｘ'), [ids.Rex]);
      assert.deepEqual(await found('REX'), [ids.Rex]);
      assert.deepEqual(await found('rèx'), [ids.Rex]);
      assert.deepEqual(await found('luna'), [ids['Ｌｕｎａ']]);
      assert.deepEqual(await found('ＬＵＮＡ'), [ids['Ｌｕｎａ']]);
      assert.deepEqual(await found('strasse'), [ids.Bello]);
      assert.deepEqual(await found('fine aerø'), [ids.Bello]);
      assert.deepEqual(await found('zoe collie'), [ids['Zoë']]);
    });

    test('q is bounded before it is folded', async () => {
      const res = await ctx.app.inject({
        url: `/v1/listings?q=${encodeURIComponent('\ufdfa'.repeat(201))}`,
        headers: bearer(key),
      });
      assertV1Error(res, 400, 'validation_failed', 'long q');
      const many = await ctx.app.inject({
        url: `/v1/listings?q=${encodeURIComponent('⑴'.repeat(11))}`,
        headers: bearer(key),
      });
      assertV1Error(many, 400, 'validation_failed', 'q folding into 11 words');
    });

    test('the migration re-indexes words stored before the folding', async () => {
      // As an older release indexed them: the raw text, folded only by the tokenizer (or catalogue_fold
      // without NFKC on PostgreSQL, which left fullwidth letters as they were).
      if (backendOf(ctx.database) === 'sqlite') {
        await rawQuery(ctx.database, 'UPDATE listing_words SET name = ? WHERE rowid = ?', [
          'Ｌｕｎａ',
          ids['Ｌｕｎａ'],
        ]);
      } else {
        await rawQuery(
          ctx.database,
          "UPDATE listing_words SET words = to_tsvector('simple', ?) WHERE pet_id = ?",
          ['ｌｕｎａ', ids['Ｌｕｎａ']],
        );
      }
      // Each query spelt differently: the page cache keys pages by the query, and writing the index alone
      // (no pet or profile changes) does not move the read version on PostgreSQL.
      assert.deepEqual(await found('lunA'), [], 'the old index misses it');
      await rerunMigration(ctx.database, '021_search_fold_nfkc.sql');
      assert.deepEqual(await found('LUna'), [ids['Ｌｕｎａ']]);
      assert.deepEqual(await found('rex'), [ids.Rex]);
      assert.deepEqual(await found('strasse fine'), [ids.Bello]);
    });

    if (backend.name.startsWith('postgres')) {
      test('PostgreSQL inlines catalogue_fold into the statements calling it (026)', async () => {
        // The test above put back 021's fold; the one migrated databases run is 026's.
        await rerunMigration(ctx.database, '026_search_fold_inlined.sql');
        const plan = await rawQuery<{ 'QUERY PLAN': string }>(
          ctx.database,
          'EXPLAIN VERBOSE SELECT catalogue_fold(name) FROM pets',
          [],
        );
        const text = plan.map((row) => row['QUERY PLAN']).join('\n');
        assert.match(text, /normalize/i, text);
        assert.doesNotMatch(text, /catalogue_fold/, text);
        assert.deepEqual(await found('Strasse FINE'), [ids.Bello]);
      });

      test("027 keeps each profile's words, filling them for profiles written before it", async () => {
        // A profile written before 027: no words of its own kept beside the pet's until 027's backfill.
        await rawQuery(ctx.database, "UPDATE listing_words SET profile_words = '' WHERE pet_id = ?", [
          ids.Bello,
        ]);
        await rerunMigration(ctx.database, '027_listing_words_profile_kept.sql');
        const renamed = await ctx.app.inject({
          method: 'PATCH',
          url: `/v1/pets/${ids.Bello}`,
          headers: bearer(key),
          payload: { name: 'Bellö' },
        });
        assert.equal(renamed.statusCode, 200, renamed.body);
        assert.deepEqual(await found('bello strasse hund fine'), [ids.Bello]);
      });

      test("a pet's words are its name's, breed's and description's, however they were last written", async () => {
        // The rename folds the name alone and adds the profile's kept words (027): the lexemes must be those
        // of the three folded together, whichever of pet and profile changed last. The columns the words come
        // from are written directly (the triggers are what is tested; the profile's document is not read).
        const pet = ids['Zoë']!;
        const sameLexemes = fc.asyncProperty(
          foldable,
          foldable,
          foldable,
          fc.boolean(),
          async (name, breed, description, renameLast) => {
            const rename = () => rawQuery(ctx.database, 'UPDATE pets SET name = ? WHERE id = ?', [name, pet]);
            const describe = () =>
              rawQuery(ctx.database, 'UPDATE pet_profiles SET breed = ?, description = ? WHERE pet_id = ?', [
                breed,
                description,
                pet,
              ]);
            if (renameLast) await describe().then(rename);
            else await rename().then(describe);
            const [row] = await rawQuery<{ kept: string[]; folded: string[] }>(
              ctx.database,
              `SELECT ARRAY(SELECT unnest(tsvector_to_array(w.words)) ORDER BY 1) AS kept,
                 ARRAY(SELECT unnest(tsvector_to_array(to_tsvector('simple', catalogue_fold(
                   p.name || ' ' || coalesce(pr.breed, '') || ' ' || coalesce(pr.description, ''))))) ORDER BY 1)
                   AS folded
               FROM pets p JOIN pet_profiles pr ON pr.pet_id = p.id JOIN listing_words w ON w.pet_id = p.id
               WHERE p.id = ?`,
              [pet],
            );
            assert.deepEqual(row!.kept, row!.folded, JSON.stringify({ name, breed, description }));
          },
        );
        await fc.assert(sameLexemes, { ...SETTINGS, numRuns: Math.max(SETTINGS.numRuns, 200) });
      });

      test('PostgreSQL folds exactly as src/db/fold.ts', async () => {
        await fc.assert(
          fc.asyncProperty(foldable, async (text) => {
            const [row] = await rawQuery<{ folded: string }>(
              ctx.database,
              'SELECT catalogue_fold(?) AS folded',
              [text],
            );
            assert.equal(row!.folded, foldText(text), JSON.stringify(text));
          }),
          { ...SETTINGS, numRuns: Math.max(SETTINGS.numRuns, 300) },
        );
      });
    }
  });
}
