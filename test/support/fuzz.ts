/**
 * What the property-based suites (test/fuzz*.test.ts) share: the seeded settings, the invariant every
 * response keeps, and the generators of hostile strings, header values and path segments.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorShape, SAFE_REQUEST_ID } from './assertions.js';

export const SEED = Number(process.env.FUZZ_SEED ?? 20_260_615);
export const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
export const SETTINGS = { seed: SEED, numRuns: RUNS, timeout: 10_000, endOnFailure: false } as const;
/** A generous bound for a whole property: a hang fails the test instead of stalling the run. */
export const TEST_TIMEOUT = 120_000;

/** The invariant every response keeps, whatever the request. */
export function assertWellFormed(res: LightMyRequestResponse, label: string): void {
  assert.ok(res.statusCode < 500, `${label}: ${res.statusCode} ${res.body}`);
  assert.match(String(res.headers['x-request-id']), SAFE_REQUEST_ID, `${label}: X-Request-Id`);
  if (res.statusCode >= 400) assertErrorShape(res, res.statusCode, /./, label);
}

// Header values a real HTTP client can send: visible ASCII, space, tab and obs-text (no CR, LF, NUL).
const headerChar = fc
  .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0x80, max: 0xff }))
  .map((c) => String.fromCharCode(c));
export const headerValue = fc.string({ unit: headerChar, maxLength: 80 });
export const printable = fc.string({
  unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});

export const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 120 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  printable,
);

/** Path segments for `{id}` parameters: encoded junk, numbers at and past every integer bound, dots. */
export const pathSegment = fc.oneof(
  fc.string().map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
  printable.map((s) => s.replace(/[/?#]/g, '')),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.integer({ min: 0, max: 50 }).map(String),
  fc.double().map(String),
  fc.constantFrom(
    '0',
    '00',
    '01',
    '+1',
    '1.0',
    '1e2',
    '9007199254740991',
    '9007199254740992',
    '9223372036854775807',
    '9223372036854775808',
    '%',
    '%zz',
    '%00',
    '%2F',
    '..',
    '.',
    '%2e%2e',
    'null',
    'undefined',
    'NaN',
    'Infinity',
  ),
);

/** Counts the statuses a property produced and asserts the expected ones came up, so weak generators show. */
export class StatusTally {
  private seen = new Map<number, number>();
  add(status: number): void {
    this.seen.set(status, (this.seen.get(status) ?? 0) + 1);
  }
  report(t: { diagnostic(message: string): void }, expected: number[]): void {
    const seen = [...this.seen].sort(([a], [b]) => a - b);
    t.diagnostic(`statuses: ${seen.map(([status, n]) => `${status}×${n}`).join(', ')}`);
    for (const status of expected) assert.ok(this.seen.has(status), `the generators produced a ${status}`);
    this.seen = new Map();
  }
}
