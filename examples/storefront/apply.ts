/**
 * "Apply to adopt", the storefront's server side. The browser holds no key that can write (or read anyone's
 * applications): it asks this server for the form and posts the person's application here; this server holds
 * the shop's `applications:write` key and calls the API with the SDK. What it forwards is bounded and rebuilt
 * field by field (nothing the form does not have goes on), only from the page's own origin, at most a few per
 * visitor a minute; the API checks the rest and its field-level errors come back to the page as they are. The
 * person's data is never logged: this file logs nothing about a submission.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Action } from './site.js';

/** The API as this server uses it (the SDK, in server.ts). */
export interface ApplicationsApi {
  form(): Promise<unknown>;
  submit(body: Submission, idempotencyKey: string | undefined): Promise<{ id: string; status: string }>;
}

/** An error answer of the API, to pass on to the page. */
export interface Refusal {
  status: number;
  code: string;
  message: string;
  details?: { field: string; message: string }[] | undefined;
}

export interface Submission {
  petId: number;
  applicant: {
    name: string;
    email: string;
    phone?: string;
    address?: { line1: string; city: string; postcode: string; country: string };
  };
  answers: Record<string, string | number | boolean>;
  consent: { dataProcessing: boolean };
}

/** Larger than any honest form (50 questions, the longest answers the default form allows, the person). */
const MAX_BODY_BYTES = 64 * 1024;
const MAX_ANSWERS = 50;
const MAX_TEXT = 4000;
/** Per visitor (remote address): submissions in a window, and how many visitors are remembered at once. */
const PER_WINDOW = 10;
const WINDOW_MS = 60_000;
const MAX_VISITORS = 10_000;

class Invalid extends Error {
  constructor(
    readonly details: { field: string; message: string }[],
    readonly code = 'validation_failed',
  ) {
    super('invalid');
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function text(source: Record<string, unknown>, key: string, field: string, max: number, required: boolean) {
  const value = source[key];
  if (value === undefined || value === '') {
    if (required) throw new Invalid([{ field, message: 'is required' }]);
    return undefined;
  }
  if (typeof value !== 'string') throw new Invalid([{ field, message: 'must be text' }]);
  if (value.length > max) throw new Invalid([{ field, message: `must be at most ${max} characters` }]);
  return value;
}

/** The submission rebuilt from what the page sent: only the form's fields, each of a bounded size. */
export function submission(body: unknown): Submission {
  if (!isObject(body)) throw new Invalid([{ field: 'body', message: 'must be an object' }]);
  const petId = body.petId;
  if (typeof petId !== 'number' || !Number.isSafeInteger(petId) || petId < 1) {
    throw new Invalid([{ field: 'petId', message: 'must be a pet id' }]);
  }
  const person = isObject(body.applicant) ? body.applicant : {};
  const applicant: Submission['applicant'] = {
    name: text(person, 'name', 'applicant.name', 200, true)!,
    email: text(person, 'email', 'applicant.email', 254, true)!,
  };
  const phone = text(person, 'phone', 'applicant.phone', 40, false);
  if (phone !== undefined) applicant.phone = phone;
  if (isObject(person.address)) {
    const a = person.address;
    const at = (key: string, max: number) => text(a, key, `applicant.address.${key}`, max, true)!;
    applicant.address = {
      line1: at('line1', 200),
      city: at('city', 100),
      postcode: at('postcode', 20),
      country: at('country', 2).toUpperCase(),
    };
  }
  const given = isObject(body.answers) ? body.answers : {};
  const ids = Object.keys(given);
  if (ids.length > MAX_ANSWERS) throw new Invalid([{ field: 'answers', message: 'has too many answers' }]);
  const answers: Submission['answers'] = {};
  for (const id of ids) {
    const value = given[id];
    const field = `answers.${id.slice(0, 40)}`;
    if (id.length > 40) throw new Invalid([{ field, message: 'is not a question of the form' }]);
    if (typeof value === 'string' && value.length > MAX_TEXT)
      throw new Invalid([{ field, message: `must be at most ${MAX_TEXT} characters` }]);
    if (
      typeof value !== 'string' &&
      typeof value !== 'boolean' &&
      !(typeof value === 'number' && Number.isFinite(value))
    )
      throw new Invalid([{ field, message: 'must be text, a number, yes or no' }]);
    answers[id] = value;
  }
  // Without the person's consent their data goes nowhere, not even to the API to be refused there.
  if (!isObject(body.consent) || body.consent.dataProcessing !== true) {
    throw new Invalid([{ field: 'consent', message: 'is required' }], 'consent_required');
  }
  return { petId, applicant, answers, consent: { dataProcessing: true } };
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
    .end(JSON.stringify(body));
}

function refuse(
  response: ServerResponse,
  status: number,
  code: string,
  message: string,
  details?: Refusal['details'],
) {
  send(response, status, { code, message, status, ...(details ? { details } : {}) });
}

/** The request's body as JSON, at most MAX_BODY_BYTES; undefined when it is too large (answered 413). */
async function readJson(request: IncomingMessage, response: ServerResponse): Promise<unknown> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    refuse(response, 413, 'payload_too_large', 'The application is larger than this shop accepts.');
    request.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      refuse(response, 413, 'payload_too_large', 'The application is larger than this shop accepts.');
      request.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    refuse(response, 400, 'invalid_json', 'The application could not be read.');
    return undefined;
  }
}

const isRefusal = (error: unknown): error is Refusal =>
  isObject(error) && typeof error.status === 'number' && typeof error.code === 'string';

/** The storefront's two application paths: the form (GET) and the submission (POST). */
export function applyActions(api: ApplicationsApi, origin: string): Record<string, Action> {
  const visitors = new Map<string, { since: number; count: number }>();

  const failed = (response: ServerResponse, error: unknown) => {
    if (isRefusal(error) && error.status < 500 && error.status !== 401 && error.status !== 403) {
      refuse(response, error.status, error.code, error.message, error.details);
    } else {
      // The shop's own key or the API failed: nothing the person can fix; no detail of ours goes to them.
      refuse(
        response,
        502,
        'service_unavailable',
        'Applications cannot be taken just now; please try again later.',
      );
    }
  };

  return {
    '/api/application-form': async (request, response) => {
      if (request.method !== 'GET') return void response.writeHead(405, { allow: 'GET' }).end();
      try {
        send(response, 200, await api.form());
      } catch (error) {
        failed(response, error);
      }
    },
    '/api/applications': async (request, response) => {
      if (request.method !== 'POST') return void response.writeHead(405, { allow: 'POST' }).end();
      // Only this shop's page may post (a form on another site cannot make a visitor apply).
      if (request.headers.origin !== origin) {
        return refuse(
          response,
          403,
          'forbidden_origin',
          "Applications are taken from this shop's own page only.",
        );
      }
      if (!/^application\/json\b/.test(request.headers['content-type'] ?? '')) {
        return refuse(response, 415, 'unsupported_media_type', 'Send the application as JSON.');
      }
      const now = Date.now();
      const visitor = request.socket.remoteAddress ?? '';
      let seen = visitors.get(visitor);
      if (!seen || now - seen.since > WINDOW_MS) {
        if (visitors.size >= MAX_VISITORS) visitors.clear();
        seen = { since: now, count: 0 };
        visitors.set(visitor, seen);
      }
      if (++seen.count > PER_WINDOW) {
        response.setHeader('retry-after', String(Math.ceil((seen.since + WINDOW_MS - now) / 1000)));
        return refuse(
          response,
          429,
          'rate_limited',
          'Too many applications from here; please wait a minute.',
        );
      }
      const body = await readJson(request, response);
      if (body === undefined) return;
      let forwarded: Submission;
      try {
        forwarded = submission(body);
      } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        const summary = error.details.map((d) => `${d.field} ${d.message}`).join('; ');
        return refuse(response, 400, error.code, `Invalid application: ${summary}.`, error.details);
      }
      // The page makes one key per filled-in form, so a retried click never applies twice.
      const key = request.headers['idempotency-key'];
      const idempotencyKey = typeof key === 'string' && /^[A-Za-z0-9_-]{8,64}$/.test(key) ? key : undefined;
      try {
        const made = await api.submit(forwarded, idempotencyKey);
        send(response, 201, { id: made.id, status: made.status });
      } catch (error) {
        failed(response, error);
      }
    },
  };
}
