/** searchListings through the HTTP layer, on every backend: filters, words, distance, sorts, paging, 400s. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BANDS_PER_DEGREE, bandOf, ringCover } from '../src/modules/listings/cover.js';
import { distanceKm } from '../src/modules/listings/search-sql.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';

interface Listing {
  pet: { id: number; name: string; categoryId: number; status: string };
  profile: Record<string, unknown>;
  primaryPhoto: unknown;
  distanceKm?: number;
}

/** A small deterministic generator, so a failure can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

for (const backend of await backends()) {
  describe(`listings [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    /** Every pet made by this suite, with what was stored. */
    const pets: { id: number; name: string; profile?: Record<string, unknown> }[] = [];

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'shelter' }));
    });
    after(() => ctx.close());

    async function addPet(
      name: string,
      profile?: Record<string, unknown>,
      extra: { categoryId?: number; status?: string } = {},
    ): Promise<number> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: {
          name,
          categoryId: extra.categoryId ?? 1,
          ...(extra.status ? { status: extra.status } : {}),
        },
      });
      assert.equal(res.statusCode, 201, res.body);
      const id = res.json().id as number;
      if (profile) {
        const put = await ctx.app.inject({
          method: 'PUT',
          url: `/v1/pets/${id}/profile`,
          headers: bearer(key),
          payload: profile,
        });
        assert.equal(put.statusCode, 200, put.body);
      }
      pets.push({ id, name, profile });
      return id;
    }

    async function search(query: string): Promise<{ items: Listing[]; pages: number }> {
      const items: Listing[] = [];
      let url: string | undefined = `/v1/listings?${query}`;
      let pages = 0;
      while (url) {
        const res: LightMyRequestResponse = await ctx.app.inject({ url, headers: bearer(key) });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        items.push(...(res.json() as Listing[]));
        pages++;
        const link = res.headers.link as string | undefined;
        url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
        assert.ok(pages < 200, 'paging ends');
      }
      return { items, pages };
    }
    const ids = (items: Listing[]) => items.map((item) => item.pet.id);

    test('filters: lists are OR within one filter, AND across; booleans match the stated value only', async () => {
      const a = await addPet('Filter A', {
        sex: 'female',
        size: 'small',
        ageGroup: 'young',
        goodWith: { children: true, dogs: false },
        houseTrained: true,
      });
      const b = await addPet('Filter B', { sex: 'male', size: 'large', goodWith: { children: false } });
      const c = await addPet(
        'Filter C',
        { sex: 'female', size: 'large', specialNeeds: true },
        { categoryId: 2 },
      );
      const d = await addPet('Filter D', undefined, { status: 'sold' });
      const mine = (items: Listing[]) =>
        ids(items)
          .filter((id) => [a, b, c, d].includes(id))
          .sort();
      const check = async (query: string, expected: number[]) =>
        assert.deepEqual(mine((await search(query)).items), expected.sort(), query);
      await check('', [a, b, c]);
      await check('status=sold', [d]);
      await check('status=available,sold', [a, b, c, d]);
      await check('sex=female', [a, c]);
      await check('sex=female&size=large', [c]);
      await check('size=small,large', [a, b, c]);
      await check('categoryId=2', [c]);
      await check('ageGroup=young', [a]);
      await check('goodWithChildren=true', [a]);
      await check('goodWithChildren=false', [b]);
      await check('goodWithDogs=false', [a]);
      await check('goodWithCats=true', []);
      await check('houseTrained=true', [a]);
      await check('specialNeeds=true', [c]);
      await check('hasPhotos=false&sex=female', [a, c]);
      await check('hasPhotos=true&sex=female', []);
      const listing = (await search('sex=male')).items.find((item) => item.pet.id === b)!;
      assert.deepEqual(listing.pet, { id: b, name: 'Filter B', categoryId: 1, status: 'available' });
      assert.equal(listing.profile.size, 'large');
      assert.equal(listing.primaryPhoto, null);
      assert.equal('distanceKm' in listing, false);
    });

    test('q: every word must match name, breed or description, ignoring case and accents', async () => {
      const one = await addPet('Zoë', {
        breed: 'Épagneul Breton',
        description: 'Loves the LAKE and long walks',
      });
      const two = await addPet('Bruno', { breed: 'Labrador', description: 'Calm. Enjoys the lake.' });
      const three = await addPet('Renée Lake');
      const q = async (words: string) =>
        ids((await search(`q=${encodeURIComponent(words)}&limit=100`)).items)
          .filter((id) => [one, two, three].includes(id))
          .sort();
      assert.deepEqual(await q('zoe'), [one]);
      assert.deepEqual(await q('EPAGNEUL breton'), [one]);
      assert.deepEqual(await q('lake'), [one, two, three].sort());
      assert.deepEqual(await q('lake calm'), [two]);
      assert.deepEqual(await q('lake, walks!'), [one]);
      assert.deepEqual(await q('renee'), [three]);
      assert.deepEqual(await q('lake missing'), []);
      const rename = (id: number, name: string) =>
        ctx.app.inject({ method: 'PATCH', url: `/v1/pets/${id}`, headers: bearer(key), payload: { name } });
      // A rename and a profile change are searched at once.
      await rename(three, 'Pépito');
      assert.deepEqual(await q('renee'), []);
      assert.deepEqual(await q('pepito'), [three]);
      // The same name sent again (its words are not indexed again) leaves the pet found as before.
      const same = await rename(three, 'Pépito');
      assert.equal(same.statusCode, 200, same.body);
      assert.deepEqual(await q('pepito'), [three]);
      // A renamed pet with a profile keeps its profile's words with its new name.
      const renamed = await rename(one, 'Zazie');
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.deepEqual(await q('zoe'), []);
      assert.deepEqual(await q('zazie epagneul walks'), [one]);
      await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${two}/profile`,
        headers: bearer(key),
        payload: { description: 'Energetic.' },
      });
      assert.deepEqual(await q('lake calm'), []);
      assert.deepEqual(await q('bruno labrador energetic'), [two]);
    });

    test('near + radiusKm are exact both ways (many random points, the antimeridian, a pole); sort=distance pages', async () => {
      const random = prng(7);
      const centre = { lat: 48.1, lon: 11.6 };
      const made: { id: number; lat: number; lon: number }[] = [];
      for (let i = 0; i < 60; i++) {
        const lat = centre.lat + (random() - 0.5) * 1.6;
        const lon = centre.lon + (random() - 0.5) * 2.4;
        made.push({
          id: await addPet(`Geo ${i}`, { location: { latitude: lat, longitude: lon } }),
          lat,
          lon,
        });
      }
      for (const radius of [10, 30, 50]) {
        const expected = made
          .map((p) => ({ id: p.id, d: distanceKm(centre.lat, centre.lon, p.lat, p.lon) }))
          .filter((p) => p.d <= radius)
          .sort((x, y) => x.d - y.d || x.id - y.id);
        const { items, pages } = await search(
          `near=${centre.lat},${centre.lon}&radiusKm=${radius}&sort=distance&limit=7`,
        );
        assert.deepEqual(
          ids(items),
          expected.map((p) => p.id),
          `radius ${radius}`,
        );
        assert.ok(pages >= Math.ceil(expected.length / 7), 'paged');
        for (const [i, item] of items.entries()) {
          assert.equal(item.distanceKm, Math.round(expected[i]!.d * 10) / 10);
        }
      }
      // A point just inside and one just outside a radius, computed with the same formula.
      const inside = await addPet('Edge in', { location: { latitude: 48.1 + 0.4496, longitude: 11.6 } });
      const outside = await addPet('Edge out', { location: { latitude: 48.1 + 0.4498, longitude: 11.6 } });
      assert.ok(distanceKm(48.1, 11.6, 48.5496, 11.6) < 50 && distanceKm(48.1, 11.6, 48.5498, 11.6) > 50);
      const edge = ids((await search(`near=48.1,11.6&radiusKm=50&limit=100`)).items);
      assert.ok(edge.includes(inside) && !edge.includes(outside));
      // Across the antimeridian and over a pole.
      const east = await addPet('Fiji east', { location: { latitude: -17, longitude: 179.9 } });
      const west = await addPet('Fiji west', { location: { latitude: -17, longitude: -179.9 } });
      const far = ids((await search('near=-17,179.95&radiusKm=20')).items);
      assert.deepEqual(far.sort(), [east, west].sort());
      const pole = await addPet('Pole', { location: { latitude: 89.9, longitude: -120 } });
      assert.deepEqual(ids((await search('near=89.95,60&radiusKm=20')).items), [pole]);
      // Pets without a location are never near anything.
      assert.ok(!ids((await search('near=0,0&radiusKm=500')).items).length);
    });

    test('sort=distance pages ring by ring: ties across pages, the radius edge, the antimeridian, both poles', async () => {
      const random = prng(11);
      const around = async (name: string, lat: number, lon: number, spreadKm: number, n: number) => {
        for (let i = 0; i < n; i++) {
          const dLat = ((random() - 0.5) * 2 * spreadKm) / 111.2;
          const latitude = Math.max(-90, Math.min(90, lat + dLat));
          let longitude =
            lon +
            ((random() - 0.5) * 2 * spreadKm) / (111.2 * Math.max(0.02, Math.cos((lat * Math.PI) / 180)));
          if (longitude > 180) longitude -= 360;
          if (longitude < -180) longitude += 360;
          await addPet(`${name} ${i}`, { location: { latitude, longitude } });
        }
      };
      await around('Dateline', -17.2, 180, 60, 25);
      await around('North', 89.8, 0, 60, 20);
      await around('South', -89.9, 120, 40, 12);
      // Five at one spot: equal distances, split by the page boundary, ordered by id.
      for (let i = 0; i < 5; i++)
        await addPet(`Same spot ${i}`, { location: { latitude: -17.1, longitude: 179.7 } });
      // On both sides of the edge of a 30 km radius around the dateline centre (computed by the same formula).
      const centre = { lat: -17.2, lon: -179.99 };
      for (const offset of [-0.00002, 0.00002]) {
        const dLat = 30 / (6371.0088 * (Math.PI / 180)) + offset;
        assert.notEqual(distanceKm(centre.lat, centre.lon, centre.lat + dLat, centre.lon) <= 30, offset > 0);
        await addPet(`Edge ${offset}`, { location: { latitude: centre.lat + dLat, longitude: centre.lon } });
      }
      const located = pets.flatMap((p) => {
        const location = p.profile?.location as { latitude?: number; longitude?: number } | undefined;
        return location?.latitude === undefined || location.longitude === undefined
          ? []
          : [{ id: p.id, lat: location.latitude, lon: location.longitude }];
      });
      for (const [lat, lon, radius, limit] of [
        [centre.lat, centre.lon, 30, 2],
        [-17.2, 179.99, 80, 3],
        [89.95, -170, 60, 4],
        [90, 0, 40, 3],
        [-90, 0, 25, 2],
        [-89.5, 45, 100, 5],
      ] as const) {
        const expected = located
          .map((p) => ({ id: p.id, d: distanceKm(lat, lon, p.lat, p.lon) }))
          .filter((p) => p.d <= radius)
          .sort((x, y) => x.d - y.d || x.id - y.id);
        assert.ok(expected.length > 2 * limit, `enough pets near ${lat},${lon}`);
        const { items } = await search(`near=${lat},${lon}&radiusKm=${radius}&sort=distance&limit=${limit}`);
        assert.deepEqual(
          ids(items),
          expected.map((p) => p.id),
          `near ${lat},${lon} within ${radius} km`,
        );
      }
    });

    test('sorts: newest (default), oldest, name; keyset pages follow Link and never repeat or skip', async () => {
      const all = (await search('limit=100&status=available,pending,sold')).items;
      const newest = (await search('limit=3&status=available,pending,sold')).items;
      assert.deepEqual(ids(newest), ids(all));
      assert.deepEqual(
        ids(newest),
        [...ids(all)].sort((x, y) => y - x),
        'newest first',
      );
      const oldest = (await search('sort=oldest&limit=4&status=available,pending,sold')).items;
      assert.deepEqual(
        ids(oldest),
        [...ids(all)].sort((x, y) => x - y),
      );
      const byName = (await search('sort=name&limit=5&status=available,pending,sold')).items;
      const expected = [...all].sort((x, y) =>
        x.pet.name < y.pet.name ? -1 : x.pet.name > y.pet.name ? 1 : x.pet.id - y.pet.id,
      );
      assert.deepEqual(ids(byName), ids(expected));
      const first = await ctx.app.inject({ url: '/v1/listings?limit=1&sex=female', headers: bearer(key) });
      assert.match(
        String(first.headers.link),
        /^<\/v1\/listings\?limit=1&sex=female&cursor=[\w.-]+>; rel="next"$/,
      );
    });

    test('400 names every bad or unknown parameter', async () => {
      const res = await ctx.app.inject({
        url: '/v1/listings?colour=red&sex=cat&goodWithDogs=yes&radiusKm=5000&limit=0&sort=distance&near=91,0',
        headers: bearer(key),
      });
      assertV1Error(res, 400, 'validation_failed', 'many');
      const fields = (res.json().details as { field: string }[]).map((d) => d.field).sort();
      assert.deepEqual(fields, ['colour', 'goodWithDogs', 'limit', 'near', 'radiusKm', 'sex'].sort());
      for (const query of [
        'radiusKm=10',
        'sort=distance',
        'q=%20%20',
        'categoryId=0',
        'status=lost',
        'hasPhotos=1',
        'near=1',
        'limit=101',
        'sex=female&sex=male',
      ]) {
        assertV1Error(
          await ctx.app.inject({ url: `/v1/listings?${query}`, headers: bearer(key) }),
          400,
          'validation_failed',
          query,
        );
      }
      // A cursor not issued, or issued for another sort or other filters, is refused as such.
      assertV1Error(
        await ctx.app.inject({ url: '/v1/listings?cursor=abc', headers: bearer(key) }),
        400,
        'invalid_cursor',
        'cursor=abc',
      );
      const page = await ctx.app.inject({ url: '/v1/listings?limit=1', headers: bearer(key) });
      const cursor = /cursor=([\w.-]+)/.exec(String(page.headers.link))![1];
      for (const other of ['sort=name&', 'sex=female&', 'status=available&']) {
        assertV1Error(
          await ctx.app.inject({ url: `/v1/listings?${other}cursor=${cursor}`, headers: bearer(key) }),
          400,
          'invalid_cursor',
          `cursor of another query: ${other}`,
        );
      }
      const { key: orders } = await ctx.createKey({ name: 'no-pets', scopes: ['orders:read'] });
      assertV1Error(
        await ctx.app.inject({ url: '/v1/listings', headers: bearer(orders) }),
        403,
        'insufficient_scope',
        'pets:read needed',
      );
    });
  });
}

// The location index's cover of a ring (what both backends read): every point at a distance within the
// ring lies in exactly one range of its band, wherever the centre is (poles and the antimeridian included).
test('ringCover holds every point of a ring, once', () => {
  const random = prng(3);
  const centres: [number, number][] = [
    [52.52, 13.405],
    [-17, 179.95],
    [0, -180],
    [89.99, 10],
    [-90, 0],
    [90, 180],
    [-45.5, -0.001],
  ];
  for (let i = 0; i < 40; i++) centres.push([random() * 180 - 90, random() * 360 - 180]);
  for (const [lat, lon] of centres) {
    for (let trial = 0; trial < 6; trial++) {
      const outer = 1 + random() * 499;
      const inner = trial % 3 === 0 ? 0 : random() * outer;
      const ranges = ringCover(lat, lon, inner, outer);
      for (let n = 0; n < 200; n++) {
        // Points near the ring's edges as well as inside it.
        const latitude = Math.max(-90, Math.min(90, lat + (random() - 0.5) * 2 * (outer / 100)));
        let longitude =
          lon +
          (random() - 0.5) *
            2 *
            Math.min(180, outer / 100 / Math.max(0.01, Math.cos((latitude * Math.PI) / 180)));
        longitude = ((((longitude + 180) % 360) + 360) % 360) - 180;
        const d = distanceKm(lat, lon, latitude, longitude);
        if (d < inner || d > outer) continue;
        const band = bandOf(latitude);
        const holding = ranges.filter(([b, from, to]) => b === band && longitude >= from && longitude <= to);
        assert.equal(
          holding.length,
          1,
          `${latitude},${longitude} (${d} km) in [${inner}, ${outer}] of ${lat},${lon}`,
        );
      }
    }
  }
  assert.equal(BANDS_PER_DEGREE, 100, 'the migrations (018) compute bands of a hundredth of a degree');
});
