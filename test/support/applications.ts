/** Helpers the applications suites share: a valid body, submitting, acting, reading. */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

export const ANSWERS = { household: 'Two adults', home: 'house', 'other-pets': false };

export function newApplication(
  petId: number,
  email = 'ada@example.org',
  extra: Record<string, unknown> = {},
) {
  return {
    petId,
    applicant: { name: 'Ada Lovelace', email, phone: '+44 20 7946 0000' },
    answers: ANSWERS,
    consent: { dataProcessing: true },
    ...extra,
  };
}

export async function createPet(app: FastifyInstance, key: string, name = 'Applicable'): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: bearer(key),
    payload: { name, categoryId: 1 },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: number }>().id;
}

export function submit(
  app: FastifyInstance,
  key: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/v1/applications',
    headers: { ...bearer(key), ...headers },
    payload: body as object,
  });
}

export async function submitted(app: FastifyInstance, key: string, petId: number, email?: string) {
  const res = await submit(app, key, newApplication(petId, email));
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string; applicantId: string; status: string; version: number }>();
}

export function act(
  app: FastifyInstance,
  key: string,
  id: string,
  action: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: `/v1/applications/${id}/${action}`,
    headers: { ...bearer(key), ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });
}

/** Acts and expects 200; returns the application. */
export async function acted(app: FastifyInstance, key: string, id: string, action: string, body?: unknown) {
  const res = await act(app, key, id, action, body);
  assert.equal(res.statusCode, 200, `${action}: ${res.body}`);
  return res.json<{ id: string; status: string; orderId?: number; statusReason?: string }>();
}

/** An application moved to in_review (submitted, then reviewed). */
export async function inReview(
  app: FastifyInstance,
  staff: string,
  partner: string,
  petId: number,
  email?: string,
) {
  const application = await submitted(app, partner, petId, email);
  await acted(app, staff, application.id, 'review');
  return application;
}

export async function getApplication(app: FastifyInstance, key: string, id: string) {
  const res = await app.inject({ url: `/v1/applications/${id}`, headers: bearer(key) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ id: string; status: string; statusReason?: string; orderId?: number; answers: object }>();
}

export async function petStatusOf(app: FastifyInstance, key: string, petId: number): Promise<string> {
  const res = await app.inject({ url: `/v1/pets/${petId}`, headers: bearer(key) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ status: string }>().status;
}
