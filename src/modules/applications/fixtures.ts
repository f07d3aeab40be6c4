import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { defineFixture, type FixtureContext } from '../fixtures.js';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const email = () => `fixture-${randomBytes(4).toString('hex')}@example.org`;
const ANSWERS = { household: 'Two adults', home: 'house', 'other-pets': false };

async function pet(app: FastifyInstance, key: string): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: bearer(key),
    payload: { name: 'Applied for', categoryId: 1 },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: number }>().id;
}

const body = (petId: number) => ({
  petId,
  applicant: { name: 'Fixture Person', email: email() },
  answers: ANSWERS,
  consent: { dataProcessing: true },
});

async function application(app: FastifyInstance, key: string): Promise<{ id: string; applicantId: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/applications',
    headers: bearer(key),
    payload: body(await pet(app, key)),
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** An application in the status `operationId` acts on: in_review for request-info and approve. */
async function applicationFor(ctx: FixtureContext, operationId?: string): Promise<string> {
  const { id } = await application(ctx.app, ctx.key);
  if (operationId === 'requestApplicationInfo' || operationId === 'approveApplication') {
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/v1/applications/${id}/review`,
      headers: bearer(ctx.key),
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  return id;
}

/** The current questions, so putting them back changes nothing other bodies rely on. */
async function currentQuestions(app: FastifyInstance, key: string): Promise<unknown> {
  const res = await app.inject({ url: '/v1/application-form', headers: bearer(key) });
  return { questions: res.json<{ questions: unknown }>().questions };
}

export default defineFixture({
  driftStatuses: {
    getApplicationForm: [200, 304],
    putApplicationForm: [200, 400, 412],
    createApplication: [201, 400, 409],
    listApplications: [200, 400],
    getApplication: [200, 304, 404],
    updateApplication: [200, 409, 412],
    reviewApplication: [200, 409, 412],
    requestApplicationInfo: [200],
    approveApplication: [200, 409],
    rejectApplication: [200],
    withdrawApplication: [200, 404],
    getApplicant: [200, 404],
    exportApplicant: [200],
    eraseApplicant: [204, 404],
  },
  fresh: [
    'createApplication',
    'updateApplication',
    'reviewApplication',
    'requestApplicationInfo',
    'approveApplication',
    'rejectApplication',
    'withdrawApplication',
    'eraseApplicant',
  ],
  bodies: {
    createApplication: async (ctx) => body(await pet(ctx.app, ctx.key)),
    putApplicationForm: (ctx) => currentQuestions(ctx.app, ctx.key),
    updateApplication: () => ({ answers: { experience: 'Some' } }),
    requestApplicationInfo: () => ({ message: 'Please tell us about your garden.' }),
    rejectApplication: () => ({ reason: 'other' }),
    withdrawApplication: () => ({}),
  },
  ids: {
    applicationId: applicationFor,
    applicantId: async (ctx) => (await application(ctx.app, ctx.key)).applicantId,
  },
  conditionalHeaders: {
    'createApplication 201': ['idempotent-replayed'],
    'listApplications 200': ['link'],
    'updateApplication 200': ['idempotent-replayed'],
    'reviewApplication 200': ['idempotent-replayed'],
    'requestApplicationInfo 200': ['idempotent-replayed'],
    'approveApplication 200': ['idempotent-replayed'],
    'rejectApplication 200': ['idempotent-replayed'],
    'withdrawApplication 200': ['idempotent-replayed'],
  },
  async drift({ app, call, auth }) {
    const form = await call('form', { url: '/v1/application-form', headers: auth() });
    await call('form 304', {
      url: '/v1/application-form',
      headers: { ...auth(), 'if-none-match': String(form.headers.etag) },
    });
    const questions = form.json<{ questions: unknown }>().questions;
    await call('put form', {
      method: 'PUT',
      url: '/v1/application-form',
      headers: auth(),
      payload: { questions },
    });
    await call('put form stale', {
      method: 'PUT',
      url: '/v1/application-form',
      headers: { ...auth(), 'if-match': '"1"' },
      payload: { questions },
    });
    await call('put form bad', {
      method: 'PUT',
      url: '/v1/application-form',
      headers: auth(),
      payload: { questions: [{ id: 'x', label: 'X', type: 'text', required: true, options: ['a'] }] },
    });
    const petId = (
      await app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: auth(),
        payload: { name: 'D', categoryId: 1 },
      })
    ).json<{ id: number }>().id;
    const submitted = body(petId);
    const created = (
      await call('create', { method: 'POST', url: '/v1/applications', headers: auth(), payload: submitted })
    ).json<{ id: string; applicantId: string }>();
    await call('create again', {
      method: 'POST',
      url: '/v1/applications',
      headers: auth(),
      payload: submitted,
    });
    await call('create bad', {
      method: 'POST',
      url: '/v1/applications',
      headers: auth(),
      payload: { ...submitted, answers: { unknown: 1 } },
    });
    await call('list', { url: '/v1/applications?limit=1', headers: auth() });
    await call('list bad', { url: '/v1/applications?status=lost', headers: auth() });
    const url = `/v1/applications/${created.id}`;
    const got = await call('get', { url, headers: auth() });
    await call('get 304', { url, headers: { ...auth(), 'if-none-match': String(got.headers.etag) } });
    await call('get unknown', { url: '/v1/applications/app_00000000000000000000', headers: auth() });
    await call('patch stale', {
      method: 'PATCH',
      url,
      headers: { ...auth(), 'if-match': '"9"' },
      payload: { answers: { experience: 'Yes' } },
    });
    await call('patch', {
      method: 'PATCH',
      url,
      headers: auth(),
      payload: { answers: { experience: 'Yes' } },
    });
    await call('review stale', {
      method: 'POST',
      url: `${url}/review`,
      headers: { ...auth(), 'if-match': '"1"' },
    });
    await call('approve early', { method: 'POST', url: `${url}/approve`, headers: auth() });
    await call('review', { method: 'POST', url: `${url}/review`, headers: auth() });
    await call('review again', { method: 'POST', url: `${url}/review`, headers: auth() });
    await call('patch in review', {
      method: 'PATCH',
      url,
      headers: auth(),
      payload: { answers: { experience: 'No' } },
    });
    await call('request info', {
      method: 'POST',
      url: `${url}/request-info`,
      headers: auth(),
      payload: { message: 'More?' },
    });
    await call('patch back', {
      method: 'PATCH',
      url,
      headers: auth(),
      payload: { answers: { experience: 'Lots' } },
    });
    await call('approve', { method: 'POST', url: `${url}/approve`, headers: auth() });
    const rejected = (
      await call('create other', {
        method: 'POST',
        url: '/v1/applications',
        headers: auth(),
        payload: body(petId),
      })
    ).json<{ id: string }>();
    await call('reject', {
      method: 'POST',
      url: `/v1/applications/${rejected.id}/reject`,
      headers: auth(),
      payload: { reason: 'duplicate' },
    });
    await call('withdraw', { method: 'POST', url: `${url}/withdraw`, headers: auth(), payload: {} });
    await call('withdraw unknown', {
      method: 'POST',
      url: '/v1/applications/app_00000000000000000000/withdraw',
      headers: auth(),
      payload: {},
    });
    const applicant = `/v1/applicants/${created.applicantId}`;
    await call('applicant', { url: applicant, headers: auth() });
    await call('applicant unknown', { url: '/v1/applicants/apl_00000000000000000000', headers: auth() });
    await call('export', { url: `${applicant}/export`, headers: auth() });
    await call('erase', { method: 'DELETE', url: applicant, headers: auth() });
    await call('erase unknown', {
      method: 'DELETE',
      url: '/v1/applicants/apl_00000000000000000000',
      headers: auth(),
    });
  },
});
