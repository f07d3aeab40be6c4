/** The assertions every suite shares: the Error shape and the headers every /v1 response carries. */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { errorCatalogueOf } from '../../src/modules/declared.js';
import { MODULES } from '../../src/modules/index.js';

/** The one error catalogue: the HTTP layer's codes and every module's. */
const errorCatalogue = errorCatalogueOf(MODULES);

const ERROR_FIELDS = ['code', 'message', 'status', 'details'];
export const SAFE_REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * The Error shape: `status` equal to the HTTP status, a catalogue `code` (exactly `code`, or matching it),
 * a non-empty message, nothing beyond the shape, `application/json`, and an X-Request-Id.
 */
export function assertErrorShape(
  res: LightMyRequestResponse,
  status: number,
  code: string | RegExp,
  label: string,
): void {
  assert.equal(res.statusCode, status, `${label}: ${res.statusCode} ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json\b/, `${label}: content-type`);
  let body: Record<string, unknown> & { code: string; message: string; details?: unknown };
  try {
    body = res.json();
  } catch {
    assert.fail(`${label}: ${res.statusCode} body is not JSON: ${res.body}`);
  }
  assert.equal(typeof body, 'object', label);
  assert.equal(typeof body.code, 'string', label);
  if (typeof code === 'string') assert.equal(body.code, code, label);
  else assert.match(body.code, code, label);
  assert.match(body.code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, `${label}: code is snake_case`);
  assert.ok(body.code in errorCatalogue, `${label}: code ${body.code} is in the catalogue`);
  assert.equal(body.status, status, `${label}: body.status`);
  assert.equal(typeof body.message, 'string', label);
  assert.ok(body.message.length > 0, label);
  assert.deepEqual(
    Object.keys(body).filter((k) => !ERROR_FIELDS.includes(k)),
    [],
    `${label}: no fields beyond the Error shape`,
  );
  if (body.details !== undefined) {
    assert.ok(Array.isArray(body.details), label);
    for (const d of body.details as object[])
      assert.deepEqual(Object.keys(d).sort(), ['field', 'message'], label);
  }
  assert.match(String(res.headers['x-request-id']), SAFE_REQUEST_ID, `${label}: X-Request-Id`);
}

export function assertRateLimitHeaders(res: LightMyRequestResponse, label: string): void {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.match(String(res.headers[name]), /^\d+$/, `${label}: ${name}`);
  }
}

/** Error shape plus the headers every /v1 response carries. */
export function assertV1Error(
  res: LightMyRequestResponse,
  status: number,
  code: string | RegExp,
  label: string,
): void {
  assertErrorShape(res, status, code, label);
  assertRateLimitHeaders(res, label);
}

/** A 401 as authentication answers it: the /v1 Error shape and `WWW-Authenticate: Bearer …`. */
export function assert401(res: LightMyRequestResponse, code: string, label: string): void {
  assertV1Error(res, 401, code, label);
  assert.match(String(res.headers['www-authenticate']), /^Bearer\b/, `${label}: WWW-Authenticate`);
}
