/**
 * Every list of the API with a real cursor: some data made through the API itself, then the first page of
 * each list (limit=1) and the cursor of its `Link: rel="next"`. Shared by the cursor fuzzing through
 * app.inject (test/fuzz.cursors.test.ts) and the end-to-end run against the built server
 * (test/fuzz.e2e.test.ts), so both drive the same lists; a new list belongs here.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Cursors } from '../../src/http/cursors.js';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}
/** One request as the caller's transport sends it (app.inject or a socket), with the suite's key. */
export type Send = (method: string, url: string, body?: unknown) => Promise<Answer>;

/** A list's first page and the cursor its Link hands out. */
export interface ListCase {
  name: string;
  /** The first page: path and query, `limit=1` first. */
  url: string;
  cursor: string;
}

/** Berlin: the pets below are placed around it, and the distance lists search from it. */
const NEAR = '52.52,13.405';
const STATUSES = 'available,pending,sold';

async function ok(send: Send, method: string, url: string, body?: unknown): Promise<Answer> {
  const res = await send(method, url, body);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${url}: ${res.status} ${res.body}`);
  return res;
}

/** What some lists are filtered by: ids of rows seedLists made. */
export interface ListIds {
  endpointId: number;
  /** A pet with two orders (the first cancelled). */
  orderedPetId: number;
  /** A pet with two applications. */
  appliedPetId: number;
  /** An applicant with two applications. */
  applicantId: string;
}

/** The first pages of every list, for cursors. */
export function listUrls({
  endpointId,
  orderedPetId,
  appliedPetId,
  applicantId,
}: ListIds): { name: string; url: string }[] {
  return [
    { name: 'pets', url: '/v1/pets?limit=1' },
    { name: 'pets by status', url: '/v1/pets?limit=1&status=available' },
    { name: 'listings newest', url: `/v1/listings?limit=1&status=${STATUSES}` },
    { name: 'listings oldest', url: `/v1/listings?limit=1&status=${STATUSES}&sort=oldest` },
    { name: 'listings name', url: `/v1/listings?limit=1&status=${STATUSES}&sort=name` },
    { name: 'listings distance', url: `/v1/listings?limit=1&status=${STATUSES}&near=${NEAR}&sort=distance` },
    {
      name: 'listings near, newest',
      url: `/v1/listings?limit=1&status=${STATUSES}&near=${NEAR}&radiusKm=100`,
    },
    { name: 'listings by words', url: `/v1/listings?limit=1&status=${STATUSES}&q=fuzz` },
    { name: 'events', url: '/v1/events?limit=1' },
    { name: 'events by type', url: '/v1/events?limit=1&type=pet.created' },
    { name: 'orders', url: '/v1/store/orders?limit=1' },
    { name: 'orders by status', url: '/v1/store/orders?limit=1&status=placed' },
    { name: 'orders by pet', url: `/v1/store/orders?limit=1&petId=${orderedPetId}` },
    { name: 'webhook endpoints', url: '/v1/webhook-endpoints?limit=1' },
    { name: 'webhook deliveries', url: `/v1/webhook-endpoints/${endpointId}/deliveries?limit=1` },
    { name: 'applications', url: '/v1/applications?limit=1' },
    { name: 'applications oldest', url: '/v1/applications?limit=1&sort=oldest' },
    { name: 'applications by status', url: '/v1/applications?limit=1&status=submitted,in_review' },
    { name: 'applications by pet', url: `/v1/applications?limit=1&petId=${appliedPetId}` },
    {
      name: 'applications by applicant, oldest',
      url: `/v1/applications?limit=1&applicantId=${applicantId}&sort=oldest`,
    },
  ];
}

export function cursorOf(res: Answer): string | undefined {
  const link = res.headers.link;
  return /[?&]cursor=([^&>]+)/.exec(typeof link === 'string' ? link : '')?.[1];
}

/**
 * Makes pets (with profiles placed around Berlin), orders, applications, webhook endpoints and, through
 * `fanOut` (the dispatcher's first step, run by the caller), deliveries; returns every list with a real
 * cursor.
 */
export async function seedLists(
  send: Send,
  fanOut: () => Promise<void>,
  hookUrl = 'https://example.com/hook',
): Promise<ListCase[]> {
  const pets: number[] = [];
  for (let i = 0; i < 6; i++) {
    const pet = await ok(send, 'POST', '/v1/pets', { name: `Fuzz ${i}`, categoryId: 1 });
    const id = (JSON.parse(pet.body) as { id: number }).id;
    await ok(send, 'PUT', `/v1/pets/${id}/profile`, {
      location: { latitude: 52.5 + i / 100, longitude: 13.4 + i / 100 },
    });
    pets.push(id);
  }
  const orders: number[] = [];
  for (const petId of pets.slice(0, 3)) {
    orders.push(
      (JSON.parse((await ok(send, 'POST', '/v1/store/orders', { petId })).body) as { id: number }).id,
    );
  }
  // A second order for the first pet, once the first is cancelled (the pet is available again).
  await ok(send, 'POST', `/v1/store/orders/${orders[0]}/cancel`);
  await ok(send, 'POST', '/v1/store/orders', { petId: pets[0] });
  // Applications for the pets without orders: two for one pet, two from one applicant.
  const apply = async (petId: number, email: string) =>
    JSON.parse(
      (
        await ok(send, 'POST', '/v1/applications', {
          petId,
          applicant: { name: 'Fuzz Applicant', email },
          answers: { household: 'Two adults', home: 'house', 'other-pets': false },
          consent: { dataProcessing: true },
        })
      ).body,
    ) as { applicantId: string };
  const { applicantId } = await apply(pets[3]!, 'fuzz-a@example.org');
  await apply(pets[4]!, 'fuzz-a@example.org');
  await apply(pets[3]!, 'fuzz-b@example.org');
  const endpoints: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await ok(send, 'POST', '/v1/webhook-endpoints', {
      url: `${hookUrl}-${i}`,
      events: ['*'],
    });
    endpoints.push((JSON.parse(res.body) as { id: number }).id);
  }
  // Events after the endpoints exist, for their deliveries.
  for (const id of pets.slice(3)) await ok(send, 'PATCH', `/v1/pets/${id}`, { name: `Fuzz renamed ${id}` });
  await fanOut();
  const cases: ListCase[] = [];
  const ids = { endpointId: endpoints[0]!, orderedPetId: pets[0]!, appliedPetId: pets[3]!, applicantId };
  for (const { name, url } of listUrls(ids)) {
    const res = await ok(send, 'GET', url);
    const cursor = cursorOf(res);
    assert.ok(cursor, `${name}: a next page (${url})`);
    cases.push({ name, url, cursor });
  }
  return cases;
}

/** `url` with its cursor: the cursor goes last, percent-encoded as a client would send any value. */
export function withCursor(url: string, cursor: string): string {
  return `${url}&cursor=${encodeURIComponent(cursor)}`;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Numbers a sort key should never be: tiny, subnormal, negative zero, huge, unsafe. */
export const EXTREME_NUMBERS = [
  1e-300,
  5e-324,
  -0,
  -1,
  0,
  1e308,
  -1e308,
  2 ** 53,
  2 ** 53 + 2,
  Number.MAX_VALUE,
  0.1,
] as const;

const extremeValues = fc.array(
  fc.oneof(
    fc.constantFrom(...EXTREME_NUMBERS),
    fc.double(),
    fc.integer(),
    fc.string({ maxLength: 30 }),
    fc.constantFrom('x'.repeat(500), '', 'newest', 'distance'),
  ),
  { minLength: 0, maxLength: 6 },
);

/** A JSON payload as a cursor carries it (base64url), of `values`. */
function payloadOf(values: unknown): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/**
 * Mutations of a valid cursor, each a different string: a character changed, cut short, lengthened, the
 * tag or payload swapped for another cursor's or for extreme values (unsigned, or signed with a key that is
 * not the service's), whole other shapes (the old `id:` cursors, JSON, huge strings). None is the service's
 * for any query, so every one must answer `400 invalid_cursor`.
 */
export function mutatedCursor(cursor: string, others: readonly string[]): fc.Arbitrary<string> {
  const [payload = '', tag = ''] = cursor.split('.');
  const foreignKey = new Cursors('k'.repeat(32));
  return fc
    .oneof(
      // One character replaced (base64url or anything).
      fc
        .tuple(
          fc.nat({ max: cursor.length - 1 }),
          fc.oneof(fc.constantFrom(...B64.split('')), fc.string({ minLength: 1, maxLength: 1 })),
        )
        .map(([i, c]) => cursor.slice(0, i) + c + cursor.slice(i + 1)),
      // One bit flipped in the decoded payload or tag.
      fc.tuple(fc.boolean(), fc.nat(), fc.nat({ max: 7 })).map(([inTag, at, bit]) => {
        const bytes = Buffer.from(inTag ? tag : payload, 'base64url');
        if (bytes.length === 0) return `${cursor}x`;
        bytes[at % bytes.length]! ^= 1 << bit;
        const part = bytes.toString('base64url');
        return inTag ? `${payload}.${part}` : `${part}.${tag}`;
      }),
      fc.nat({ max: cursor.length - 1 }).map((n) => cursor.slice(0, n)),
      fc.string({ minLength: 1, maxLength: 8 }).map((s) => cursor + s),
      fc.constantFrom(payload, tag, `${payload}.`, `.${tag}`, `${payload}..${tag}`, `${payload}.${tag}=`),
      // Another list's tag or payload.
      fc.constantFrom(cursor, ...others).map((other) => `${payload}.${other.split('.')[1] ?? ''}`),
      fc.constantFrom(cursor, ...others).map((other) => `${other.split('.')[0] ?? ''}.${tag}`),
      // Extreme values: with the real tag, without one, or signed by another key.
      extremeValues.map((values) => `${payloadOf(values)}.${tag}`),
      extremeValues.map((values) => payloadOf(values)),
      fc
        .tuple(extremeValues, fc.constantFrom('/v1/pets', '/v1/listings', '/v1/events', '/v1/store/orders'))
        .map(([values, path]) => foreignKey.issue({ path }, values as (string | number)[])),
      // The shapes cursors had before they were signed, and the defect's cursor.
      fc.nat({ max: 1000 }).map((id) => Buffer.from(`id:${id}`).toString('base64url')),
      fc.constant('WyJkaXN0YW5jZSIsMSwxMCwxZS0zMDBd'),
      // Huge or odd strings.
      fc.constantFrom('A'.repeat(601), 'A'.repeat(5000), `${cursor}.${cursor}`, '%00', '..', ' '),
      fc.string({ unit: 'binary', maxLength: 40 }),
    )
    .filter((mutated) => mutated !== cursor && !others.includes(mutated));
}
