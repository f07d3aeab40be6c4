/**
 * The served OpenAPI document: first that it says what the interface specification says, then the drift
 * test: a representative set of requests covering every operation and most status codes, each response
 * validated against the served document (status documented, body valid against the documented schema,
 * documented headers present and well-typed), so the document and the behaviour cannot drift apart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { StorageUnavailableError } from '../src/db/database.js';
import { generateApiKey } from '../src/modules/accounts/keys.js';
import { allScopes } from '../src/modules/accounts/scopes.js';
import { categoryRepository } from '../src/modules/categories/repository.js';
import { petRepository } from '../src/modules/pets/repository.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { faultyApp } from './support/faults.js';
import { insertOrderRow } from './support/order-rows.js';
import { declaredScopes, scopesLacking } from './support/scopes.js';
import { appendEventOf, driftStatuses, moduleFixtures } from './support/fixtures.js';

type Json = Record<string, unknown>;
interface Operation extends Json {
  operationId?: string;
  tags?: string[];
  deprecated?: boolean;
  security?: Json[];
  parameters?: Json[];
  requestBody?: Json;
  responses: Record<string, Json>;
}
interface OpenApiDoc extends Json {
  openapi: string;
  info: Json;
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: Json & { schemas: Record<string, Json>; securitySchemes?: Record<string, Json> };
  security?: Json[];
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** What the interface specification requires each operation to document, at least. */
const SPEC_STATUSES: Record<string, string[]> = {
  listPets: ['200', '400', '401', '429'],
  createPet: ['201', '400', '401', '429'],
  getPet: ['200', '400', '401', '404', '410', '429'],
};

/** Every module's fixture (src/modules/<module>/fixtures.ts), in module order. */
const FIXTURES = await moduleFixtures();

/** Operations served without a key, as their modules' fixtures declare (photo renderings: `<img>` URLs). */
const KEYLESS = [...FIXTURES.values()].flatMap((fixture) => fixture.keyless ?? []);

/**
 * Headers documented as present only sometimes (`link` when another page exists, `idempotent-replayed` on a
 * replay), as the modules' fixtures declare; every other documented header must be on the response.
 */
const CONDITIONAL_HEADERS: Record<string, string[]> = Object.assign(
  {},
  ...[...FIXTURES.values()].map((fixture) => fixture.conditionalHeaders ?? {}),
);

/**
 * Documented on every response but sent only to origins listed in CORS_ORIGINS, which the drift tests do not
 * set: there it must be absent (headers.test.ts checks it where CORS is configured).
 */
const CORS_ONLY_HEADERS = ['access-control-allow-origin'];

function resolve<T = Json>(doc: OpenApiDoc, node: unknown): T {
  let current = node as Json;
  for (let depth = 0; typeof current?.$ref === 'string'; depth++) {
    assert.ok(depth < 20, 'no $ref cycles');
    const ref = current.$ref as string;
    assert.ok(ref.startsWith('#/'), `only local refs: ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
      .reduce<Json>((obj, key) => obj?.[key] as Json, doc);
    assert.ok(current, `${ref} resolves`);
  }
  return current as T;
}

function findOperation(
  doc: OpenApiDoc,
  operationId: string,
): { path: string; method: string; op: Operation } {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (op?.operationId === operationId) return { path, method, op };
    }
  }
  assert.fail(`operation ${operationId} is documented`);
}

function pointer(parts: string[]): string {
  return `openapi.json#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

/** Validates responses against a served document. */
class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly cache = new Map<string, ValidateFunction>();
  private readonly prefix: string;
  private readonly templates: { path: string; regex: RegExp }[];

  constructor(readonly doc: OpenApiDoc) {
    (addFormatsPlugin as unknown as (ajv: Ajv2020) => Ajv2020)(this.ajv);
    this.ajv.addSchema(doc, 'openapi.json');
    this.prefix = (doc.servers?.[0]?.url ?? '').replace(/\/$/, '');
    this.templates = Object.keys(doc.paths).map((path) => ({
      path,
      regex: new RegExp(
        `^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`,
      ),
    }));
  }

  private validator(parts: string[]): ValidateFunction {
    const ref = pointer(parts);
    let validate = this.cache.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: ref });
      this.cache.set(ref, validate);
    }
    return validate;
  }

  private errorSchema(): ValidateFunction {
    return this.validator(['components', 'schemas', 'Error']);
  }

  /**
   * Returns the ways `res` disagrees with the document (none: it agrees) and, for a documented operation,
   * the `operationId status` pair it answered, for the coverage checks.
   */
  check(method: string, url: string, res: LightMyRequestResponse): { problems: string[]; matched?: string } {
    const problems: string[] = [];
    const pathname = url.split('?')[0]!;
    const relative = pathname.startsWith(`${this.prefix}/`) ? pathname.slice(this.prefix.length) : undefined;
    const template = relative === undefined ? undefined : this.templates.find((t) => t.regex.test(relative));
    const op = template ? this.doc.paths[template.path]![method.toLowerCase()] : undefined;

    if (!template || !op) {
      // Unknown paths (404) and wrong methods (405) are outside the document; they must still be Errors.
      if (!template && res.statusCode !== 404) problems.push(`undocumented path answered ${res.statusCode}`);
      if (template && res.statusCode !== 405) problems.push(`undocumented method answered ${res.statusCode}`);
      if (template && !res.headers.allow) problems.push('405 without Allow');
      if (!this.errorSchema()(safeJson(res))) problems.push(`body is not an Error: ${res.body}`);
      return { problems };
    }

    const status = String(res.statusCode);
    const key = op.responses[status] ? status : op.responses[`${status[0]}XX`] ? `${status[0]}XX` : 'default';
    const documented = op.responses[key];
    if (!documented) return { problems: [`${op.operationId}: status ${status} is not documented`] };
    const matched = `${op.operationId} ${status}`;
    const response = resolve(this.doc, documented);
    const base = ['paths', template.path, method.toLowerCase(), 'responses', key];
    if (documented.$ref) base.splice(0, base.length, ...(documented.$ref as string).slice(2).split('/'));

    const content = response.content as Record<string, Json> | undefined;
    if (content) {
      const type = String(res.headers['content-type'] ?? '')
        .split(';')[0]!
        .trim()
        .toLowerCase();
      if (!(type in content)) {
        problems.push(`content-type ${type || '(none)'} is not one of ${Object.keys(content).join(', ')}`);
      } else if (content[type]!.schema && !type.startsWith('image/')) {
        const validate = this.validator([...base, 'content', type, 'schema']);
        if (!validate(safeJson(res))) {
          problems.push(
            `body does not match the schema: ${this.ajv.errorsText(validate.errors)}; body ${res.body.slice(0, 300)}`,
          );
        }
      }
    } else if (res.body.length > 0) {
      problems.push('a body where none is documented');
    }

    const conditional = CONDITIONAL_HEADERS[`${op.operationId} ${status}`] ?? [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
      const lower = name.toLowerCase();
      const value = res.headers[lower];
      if (CORS_ONLY_HEADERS.includes(lower)) {
        if (value !== undefined) problems.push(`${name} sent although CORS_ORIGINS is not set`);
        continue;
      }
      if (value === undefined) {
        if (!conditional.includes(lower)) problems.push(`documented header ${name} is missing`);
        continue;
      }
      const schema = resolve(this.doc, header).schema as Json | undefined;
      if (schema) {
        const raw = String(value);
        const typed =
          schema.type === 'integer' || schema.type === 'number'
            ? /^-?\d+(\.\d+)?$/.test(raw)
              ? Number(raw)
              : raw
            : raw;
        if (!this.ajv.validate(schema, typed))
          problems.push(`header ${name}: ${raw} does not match ${JSON.stringify(schema)}`);
      }
    }
    return { problems, matched };
  }
}

function safeJson(res: LightMyRequestResponse): unknown {
  try {
    return res.json();
  } catch {
    return Symbol('not JSON');
  }
}

/**
 * The documented responses each cross-cutting drift test must produce (each test asserts its own share, so it
 * fails on its own if it stops producing them); a module's own drift test (its fixture's `drift`) must produce
 * every status its fixture lists. The last drift test checks the shares add up to the whole.
 */
const DRIFT_COVERAGE = {
  successes: { listPets: [200], createPet: [201], getPet: [200], listCategories: [200] },
  '400s': { listPets: [400], createPet: [400], getPet: [400], listCategories: [400] },
  '401s on every operation': { listPets: [401], createPet: [401], getPet: [401], listCategories: [401] },
  '403s on every operation': {
    listPets: [403],
    createPet: [403],
    getPet: [403],
    listCategories: [403],
    updatePet: [403],
    deletePet: [403],
  },
  '404, 405, 410, 413, 415, 422': { getPet: [404, 410], createPet: [413, 415, 422] },
  '429s: a tiny enterprise quota, and the keyless per-address bucket': {
    listPets: [429],
    createPet: [429],
    getPet: [429],
    listCategories: [429],
  },
  'pet writes and conditional requests': {
    updatePet: [200, 400, 401, 404, 409, 412, 415, 422],
    deletePet: [204, 401, 404, 409, 412, 422],
    getPet: [304],
    listPets: [304],
  },
  '503 from unavailable storage': {
    updatePet: [503],
    deletePet: [503],
    listPets: [503],
    createPet: [503],
    getPet: [503],
    listCategories: [503],
  },
} satisfies Record<string, Record<string, number[]>>;

/** Every status each operation must answer in the drift tests, from the modules' fixtures. */
const EXPECTED_STATUSES = await driftStatuses();

function coveragePairs(statuses: Record<string, number[]>): string[] {
  return Object.entries(statuses).flatMap(([op, list]) => list.map((status) => `${op} ${status}`));
}

for (const backend of await backends()) {
  describe(`OpenAPI document [${backend.name}]`, () => {
    let ctx: TestContext;
    let doc: OpenApiDoc;

    before(async () => {
      ctx = await createTestContext(backend);
      const res = await ctx.app.inject({ url: '/v1/openapi.json' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^application\/json\b/);
      doc = res.json();
    });
    after(() => ctx.close());

    test('is OpenAPI 3.1, version 1.0.0, served under /v1', () => {
      assert.match(doc.openapi, /^3\.1\.\d+$/);
      assert.equal(doc.info.version, '1.0.0');
      assert.equal(typeof doc.info.title, 'string');
      assert.ok(
        doc.servers?.some((s) => /\/v1\/?$/.test(s.url)),
        'a server URL ends in /v1',
      );
    });

    test('operations listPets, createPet and getPet, tagged animals; only getPet is deprecated', () => {
      assert.ok((doc.tags as { name: string }[]).some((t) => t.name === 'animals'));
      const expected = {
        listPets: ['get', '/pets'],
        createPet: ['post', '/pets'],
        getPet: ['get', '/pets/{petId}'],
      };
      for (const [operationId, [method, path]] of Object.entries(expected)) {
        const found = findOperation(doc, operationId);
        assert.equal(found.method, method, operationId);
        assert.equal(found.path, path, operationId);
        assert.ok(found.op.tags?.includes('animals'), `${operationId} is tagged animals`);
        assert.equal(found.op.deprecated === true, operationId === 'getPet', `${operationId} deprecated`);
      }
      const ids = Object.values(doc.paths).flatMap((item) =>
        METHODS.map((m) => item[m]?.operationId).filter(Boolean),
      );
      assert.equal(new Set(ids).size, ids.length, 'operation ids are unique');
    });

    test('a bearer security scheme applies to every operation', () => {
      const schemes = Object.entries(doc.components.securitySchemes ?? {}).filter(
        ([, s]) => s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer',
      );
      assert.equal(schemes.length, 1, 'one HTTP bearer scheme');
      const [name] = schemes[0]!;
      for (const item of Object.values(doc.paths)) {
        for (const method of METHODS) {
          const op = item[method];
          if (!op) continue;
          const security = op.security ?? doc.security ?? [];
          if (KEYLESS.includes(op.operationId!)) {
            assert.deepEqual(op.security, [], `${op.operationId} is documented as needing no key`);
            continue;
          }
          assert.ok(security.length > 0, `${op.operationId} requires security`);
          assert.ok(
            security.every((req) => name in req),
            `${op.operationId} uses ${name}`,
          );
        }
      }
    });

    test("each operation's security names the scopes it needs; each documents 403 insufficient_scope", () => {
      const expected = {
        listPets: ['pets:read'],
        createPet: ['pets:write'],
        getPet: ['pets:read'],
        listCategories: ['pets:read'],
      };
      for (const [operationId, scopes] of Object.entries(expected)) {
        assert.deepEqual(findOperation(doc, operationId).op.security, [{ bearerAuth: scopes }], operationId);
      }
      for (const item of Object.values(doc.paths)) {
        for (const method of METHODS) {
          const op = item[method];
          if (!op || KEYLESS.includes(op.operationId!)) continue;
          const scopes = declaredScopes((op.security ?? []) as Record<string, string[]>[]);
          assert.ok(scopes.length > 0, `${op.operationId} declares its scopes`);
          const forbidden = op.responses['403'];
          assert.ok(forbidden, `${op.operationId} documents 403`);
          const response = resolve(doc, forbidden);
          const schema = (response.content as Record<string, Json>)['application/json']!.schema;
          assert.equal(
            resolve(doc, schema),
            doc.components.schemas.Error,
            `${op.operationId} 403 is an Error`,
          );
          assert.ok(
            (response.headers as Json)['WWW-Authenticate'],
            `${op.operationId} 403 documents WWW-Authenticate`,
          );
        }
      }
      const scheme = JSON.stringify(doc.components.securitySchemes);
      for (const scope of allScopes())
        assert.ok(scheme.includes(`\`${scope}\``), `the bearer scheme describes ${scope}`);
      assert.match(String(doc.info.description), /insufficient_scope/);
    });

    test('listPets parameters: limit 1..100 default 20, status enum', () => {
      const { op } = findOperation(doc, 'listPets');
      const params = (op.parameters ?? []).map((p) => resolve(doc, p));
      const limit = params.find((p) => p.name === 'limit' && p.in === 'query');
      assert.ok(limit, 'limit is a query parameter');
      assert.notEqual(limit.required, true);
      const limitSchema = resolve(doc, limit.schema);
      assert.equal(limitSchema.type, 'integer');
      assert.equal(limitSchema.minimum, 1);
      assert.equal(limitSchema.maximum, 100);
      assert.equal(limitSchema.default, 20);
      const status = params.find((p) => p.name === 'status' && p.in === 'query');
      assert.ok(status, 'status is a query parameter');
      assert.notEqual(status.required, true);
      const statusSchema = resolve(doc, status.schema);
      assert.equal(statusSchema.type, 'string');
      assert.deepEqual([...(statusSchema.enum as string[])].sort(), ['available', 'pending', 'sold']);
    });

    test('getPet takes petId, a required int64 path parameter', () => {
      const { op } = findOperation(doc, 'getPet');
      const petId = (op.parameters ?? []).map((p) => resolve(doc, p)).find((p) => p.name === 'petId');
      assert.ok(petId);
      assert.equal(petId.in, 'path');
      assert.equal(petId.required, true);
      const schema = resolve(doc, petId.schema);
      assert.equal(schema.type, 'integer');
      assert.equal(schema.format, 'int64');
    });

    test('schemas: NewPet, Pet, PetStatus and Error as the spec describes them', () => {
      const { op } = findOperation(doc, 'createPet');
      const body = resolve(doc, op.requestBody);
      assert.equal(body.required, true);
      const newPet = resolve(doc, (body.content as Record<string, Json>)['application/json']!.schema);
      assert.deepEqual([...(newPet.required as string[])].sort(), ['categoryId', 'name']);
      const props = newPet.properties as Record<string, Json>;
      assert.equal(resolve(doc, props.name).type, 'string');
      assert.equal(resolve(doc, props.categoryId).type, 'integer');
      assert.equal(resolve(doc, props.categoryId).format, 'int64');
      assert.deepEqual([...(resolve(doc, props.status).enum as string[])].sort(), [
        'available',
        'pending',
        'sold',
      ]);

      const pet = resolve(
        doc,
        (resolve(doc, findOperation(doc, 'getPet').op.responses['200']).content as Record<string, Json>)[
          'application/json'
        ]!.schema,
      );
      assert.ok((pet.required as string[]).includes('id'));
      for (const field of ['name', 'categoryId'])
        assert.ok((pet.required as string[]).includes(field), field);
      const petProps = pet.properties as Record<string, Json>;
      assert.equal(resolve(doc, petProps.id).type, 'integer');
      assert.equal(resolve(doc, petProps.id).format, 'int64');

      const pets = resolve(
        doc,
        (resolve(doc, findOperation(doc, 'listPets').op.responses['200']).content as Record<string, Json>)[
          'application/json'
        ]!.schema,
      );
      assert.equal(pets.type, 'array');

      const error = resolve(doc, doc.components.schemas.Error);
      assert.deepEqual([...(error.required as string[])].sort(), ['code', 'message', 'status']);
      const errorProps = error.properties as Record<string, Json>;
      assert.equal(errorProps.code!.type, 'string');
      assert.equal(errorProps.message!.type, 'string');
      assert.equal(errorProps.status!.type, 'integer');
    });

    test('every status code the spec names is documented, errors with the Error schema', () => {
      for (const [operationId, statuses] of Object.entries(SPEC_STATUSES)) {
        const { op } = findOperation(doc, operationId);
        for (const status of statuses) {
          const response = op.responses[status];
          assert.ok(response, `${operationId} documents ${status}`);
          assert.equal(
            typeof resolve(doc, response).description,
            'string',
            `${operationId} ${status} has a description`,
          );
          if (Number(status) >= 400) {
            const schema = resolve(
              doc,
              (resolve(doc, response).content as Record<string, Json>)['application/json']!.schema,
            );
            assert.deepEqual(
              [...(schema.required as string[])].sort(),
              ['code', 'message', 'status'],
              `${operationId} ${status}`,
            );
          }
        }
      }
    });

    test('headers: rate limits everywhere, Location on 201, Deprecation/Sunset/Link on getPet, Retry-After on 429', () => {
      const headersOf = (operationId: string, status: string): string[] =>
        Object.keys(
          (resolve(doc, findOperation(doc, operationId).op.responses[status]).headers ?? {}) as Json,
        ).map((h) => h.toLowerCase());
      for (const operationId of Object.keys(SPEC_STATUSES)) {
        for (const status of Object.keys(findOperation(doc, operationId).op.responses)) {
          const headers = headersOf(operationId, status);
          for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
            assert.ok(headers.includes(h), `${operationId} ${status} documents ${h}`);
          }
          if (operationId === 'getPet') {
            for (const h of ['deprecation', 'sunset', 'link'])
              assert.ok(headers.includes(h), `getPet ${status} documents ${h}`);
          }
          if (status === '401')
            assert.ok(headers.includes('www-authenticate'), `${operationId} 401 documents WWW-Authenticate`);
        }
        assert.ok(
          headersOf(operationId, '429').includes('retry-after'),
          `${operationId} 429 documents Retry-After`,
        );
      }
      assert.ok(headersOf('createPet', '201').includes('location'), 'createPet 201 documents Location');
      const reset = resolve(
        doc,
        (resolve(doc, findOperation(doc, 'listPets').op.responses['200']).headers as Json)[
          'X-RateLimit-Reset'
        ],
      );
      assert.equal(
        resolve(doc, reset.schema).type,
        'integer',
        'X-RateLimit-Reset is an integer (Unix seconds)',
      );
    });

    test('the document describes the decisions on the gaps and the error catalogue', () => {
      const text = JSON.stringify(doc);
      for (const phrase of [
        'available',
        'cursor',
        'rejected',
        'per account',
        'Idempotency-Key',
        'validation_failed',
        'rate_limited',
      ]) {
        assert.ok(text.includes(phrase), `mentions ${phrase}`);
      }
    });

    test('/v1/docs serves the same document', async () => {
      const res = await ctx.app.inject({ url: '/v1/docs/json' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), doc);
    });
  });

  describe(`drift: every response matches the served document [${backend.name}]`, () => {
    let ctx: TestContext;
    let contract: Contract;
    let key: string;
    const auth = () => bearer(key);

    /**
     * For one test: `call` sends a request and asserts at once that the response agrees with the document;
     * `done` asserts that the test produced every response DRIFT_COVERAGE gives it, so no test passes on
     * fewer requests than it claims (run alone or not).
     */
    function session(name: keyof typeof DRIFT_COVERAGE) {
      return sessionOf(name, DRIFT_COVERAGE[name]);
    }

    function sessionOf(name: string, coverage: Record<string, number[]>) {
      const covered = new Set<string>();
      return {
        async call(
          label: string,
          options: InjectOptions,
          app: FastifyInstance = ctx.app,
        ): Promise<LightMyRequestResponse> {
          const res = await app.inject(options);
          const method = options.method ?? 'GET';
          const { problems, matched } = contract.check(method, String(options.url), res);
          assert.deepEqual(problems, [], `${label} (${method} ${options.url} → ${res.statusCode})`);
          if (matched) covered.add(matched);
          return res;
        },
        done(): void {
          const missing = coveragePairs(coverage).filter((pair) => !covered.has(pair));
          assert.deepEqual(missing, [], `${name}: every response it is meant to produce`);
        },
      };
    }

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
      contract = new Contract((await ctx.app.inject({ url: '/v1/openapi.json' })).json());
    });
    after(() => ctx.close());

    test('successes', async () => {
      const { call, done } = session('successes');
      const ids: number[] = [];
      for (const [i, status] of (['available', 'pending', 'sold', undefined] as const).entries()) {
        const res = await call('create', {
          method: 'POST',
          url: '/v1/pets',
          headers: auth(),
          payload: { name: `Drift ${i} 🐾`, categoryId: i + 1, ...(status ? { status } : {}) },
        });
        assert.equal(res.statusCode, 201);
        ids.push(res.json().id);
      }
      const idem = { ...auth(), 'idempotency-key': 'drift-once' };
      await call('create with key', {
        method: 'POST',
        url: '/v1/pets',
        headers: idem,
        payload: { name: 'Once', categoryId: 1 },
      });
      const replay = await call('replay', {
        method: 'POST',
        url: '/v1/pets',
        headers: idem,
        payload: { name: 'Once', categoryId: 1 },
      });
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      const page = await call('list with next page', { url: '/v1/pets?limit=2', headers: auth() });
      assert.ok(page.headers.link);
      await call('follow next', { url: /^<([^>]+)>/.exec(String(page.headers.link))![1]!, headers: auth() });
      for (const query of ['', '?limit=100', '?status=pending', '?status=sold&limit=1']) {
        await call('list', { url: `/v1/pets${query}`, headers: auth() });
      }
      for (const id of ids) await call('get', { url: `/v1/pets/${id}`, headers: auth() });
      await call('categories', { url: '/v1/categories', headers: auth() });
      done();
    });

    test('400s', async () => {
      const { call, done } = session('400s');
      for (const query of ['limit=0', 'limit=101', 'limit=x', 'status=adopted', 'cursor=bogus', 'page=2']) {
        await call('bad list query', { url: `/v1/pets?${query}`, headers: auth() });
      }
      // An operation without parameters refuses unknown ones like every other.
      const unknown = await call('unknown parameter', { url: '/v1/categories?sort=name', headers: auth() });
      assert.equal(unknown.statusCode, 400);
      for (const payload of [
        {},
        { name: '', categoryId: 1 },
        { name: 'A', categoryId: 99 },
        { name: 'A', categoryId: 1, id: 3 },
      ]) {
        await call('bad body', { method: 'POST', url: '/v1/pets', headers: auth(), payload });
      }
      await call('bad JSON', {
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: '{"name"',
      });
      await call('empty JSON', {
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: '',
      });
      await call('bad Idempotency-Key', {
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), 'idempotency-key': 'has space' },
        payload: { name: 'A', categoryId: 1 },
      });
      for (const id of ['abc', '0', '-1', '1.5', '1e3'])
        await call('bad petId', { url: `/v1/pets/${id}`, headers: auth() });
      done();
    });

    test('401s on every operation', async () => {
      const { call, done } = session('401s on every operation');
      const { key: revoked, id } = await ctx.createKey();
      await ctx.accounts.revokeKey(id, ctx.clock.now);
      const requests: InjectOptions[] = [
        { url: '/v1/pets' },
        { method: 'POST', url: '/v1/pets', payload: { name: 'A', categoryId: 1 } },
        { url: '/v1/pets/1' },
        { url: '/v1/categories' },
      ];
      for (const request of requests) {
        for (const headers of [
          {},
          { authorization: 'Basic abc' },
          bearer(generateApiKey()),
          bearer(revoked),
        ]) {
          await call('unauthenticated', { ...request, headers });
        }
      }
      done();
    });

    test('403s on every operation', async () => {
      const { call, done } = session('403s on every operation');
      const refused: string[] = [];
      for (const [path, item] of Object.entries(contract.doc.paths)) {
        for (const method of METHODS) {
          const op = item[method];
          if (!op || KEYLESS.includes(op.operationId!)) continue;
          // The scope is checked before the request is parsed: any id and no body reach the 403.
          const { key: lacking } = await ctx.createKey({
            scopes: scopesLacking(declaredScopes((op.security ?? []) as Record<string, string[]>[])),
          });
          const res = await call('lacking the scope', {
            method: method.toUpperCase() as 'GET',
            url: `/v1${path.replace(/\{\w+\}/g, '1')}`,
            headers: bearer(lacking),
          });
          assert.equal(res.statusCode, 403, `${op.operationId}: ${res.body}`);
          refused.push(op.operationId!);
        }
      }
      assert.ok(refused.length >= 4, refused.join(', '));
      done();
    });

    test('404, 405, 410, 413, 415, 422', async () => {
      const { call, done } = session('404, 405, 410, 413, 415, 422');
      await call('unknown pet', { url: '/v1/pets/987654321', headers: auth() });
      await call('unknown route', { url: '/v1/nope', headers: auth() });
      await call('unknown nested route', { url: '/v1/pets/1/photos', headers: auth() });
      for (const method of ['DELETE', 'PUT', 'PATCH'] as const)
        await call('wrong method', { method, url: '/v1/pets', headers: auth() });
      await call('wrong method', { method: 'POST', url: '/v1/pets/1', headers: auth() });
      await call('too large', {
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'x'.repeat(20_000), categoryId: 1 }),
      });
      await call('not JSON', {
        method: 'POST',
        url: '/v1/pets',
        headers: { ...auth(), 'content-type': 'text/plain' },
        payload: 'Rex',
      });
      const idem = { ...auth(), 'idempotency-key': 'drift-reuse' };
      await call('first use', {
        method: 'POST',
        url: '/v1/pets',
        headers: idem,
        payload: { name: 'A', categoryId: 1 },
      });
      const reused = await call('reuse', {
        method: 'POST',
        url: '/v1/pets',
        headers: idem,
        payload: { name: 'B', categoryId: 1 },
      });
      assert.equal(reused.statusCode, 422);

      const pet = (
        await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: auth(),
          payload: { name: 'Old', categoryId: 1 },
        })
      ).json();
      const saved = ctx.clock.now;
      try {
        ctx.clock.set(Date.UTC(2030, 11, 5));
        const gone = await call('after sunset', { url: `/v1/pets/${pet.id}`, headers: auth() });
        assert.equal(gone.statusCode, 410);
        await call('after sunset, unknown', { url: '/v1/pets/987654321', headers: auth() });
      } finally {
        ctx.clock.set(saved);
      }
      done();
    });

    test('429s: a tiny enterprise quota, and the keyless per-address bucket', async () => {
      const { call, done } = session('429s: a tiny enterprise quota, and the keyless per-address bucket');
      const { key: tiny } = await ctx.createKey({ plan: 'enterprise', perMinute: 2, perDay: 1000 });
      const requests: InjectOptions[] = [
        { url: '/v1/pets' },
        { method: 'POST', url: '/v1/pets', payload: { name: 'A', categoryId: 1 } },
        { url: '/v1/pets/1' },
        { url: '/v1/categories' },
      ];
      for (const request of requests) {
        for (let i = 0; i < 3; i++) await call('tiny quota', { ...request, headers: bearer(tiny) });
      }
      const strict = await createTestContext(backend, { config: { unauthenticatedPerMinute: 1 } });
      try {
        for (const request of requests)
          await call('keyless, limited', { ...request, headers: { authorization: 'Bearer x' } }, strict.app);
      } finally {
        await strict.close();
      }
      done();
    });

    test('pet writes and conditional requests', async () => {
      const { call, done } = session('pet writes and conditional requests');
      const created = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: auth(),
        payload: { name: 'Writable', categoryId: 1 },
      });
      const id = (created.json() as { id: number }).id;
      const url = `/v1/pets/${id}`;
      const patch = (payload: unknown, headers: Record<string, string> = {}) => ({
        method: 'PATCH' as const,
        url,
        headers: { ...auth(), 'content-type': 'application/merge-patch+json', ...headers },
        payload: JSON.stringify(payload),
      });
      const got = await call('get', { url, headers: auth() });
      await call('get 304', { url, headers: { ...auth(), 'if-none-match': String(got.headers.etag) } });
      const page = await call('list', { url: '/v1/pets?limit=3', headers: auth() });
      await call('list 304', {
        url: '/v1/pets?limit=3',
        headers: { ...auth(), 'if-none-match': String(page.headers.etag) },
      });
      await call('patch', patch({ name: 'Patched' }, { 'if-match': '"1"' }));
      await call('patch json', { ...patch({ status: 'pending' }), headers: auth() });
      await call('patch replayed', patch({ name: 'Again' }, { 'idempotency-key': 'drift-patch' }));
      await call('patch replay', patch({ name: 'Again' }, { 'idempotency-key': 'drift-patch' }));
      await call('patch 422', patch({ name: 'Other' }, { 'idempotency-key': 'drift-patch' }));
      await call('patch 412', patch({ name: 'Late' }, { 'if-match': '"1"' }));
      for (const payload of [{}, { name: null }, { id: 3 }, { categoryId: 99 }])
        await call('patch 400', patch(payload));
      await call('patch 415', {
        ...patch({ name: 'A' }),
        headers: { ...auth(), 'content-type': 'text/plain' },
      });
      await call('patch 404', { ...patch({ name: 'A' }), url: '/v1/pets/987654321' });
      await call('patch 401', { ...patch({ name: 'A' }), headers: { 'content-type': 'application/json' } });
      const account = await ctx.accounts.upsertAccount(
        { name: 'drift-orders', plan: 'business' },
        ctx.clock.now,
      );
      await insertOrderRow(ctx.database, {
        accountId: account.id,
        petId: id,
        status: 'placed',
        now: ctx.clock.now,
      });
      await call('patch 409', patch({ status: 'sold' }));
      await call('delete 409', { method: 'DELETE', url, headers: auth() });
      const other = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: auth(),
        payload: { name: 'Deletable', categoryId: 1 },
      });
      const otherUrl = `/v1/pets/${(other.json() as { id: number }).id}`;
      await call('delete 412', {
        method: 'DELETE',
        url: otherUrl,
        headers: { ...auth(), 'if-match': '"9"' },
      });
      await call('delete 401', { method: 'DELETE', url: otherUrl });
      const idem = { ...auth(), 'idempotency-key': 'drift-delete' };
      await call('delete', { method: 'DELETE', url: otherUrl, headers: idem });
      await call('delete replay', { method: 'DELETE', url: otherUrl, headers: idem });
      await call('delete 422', { method: 'DELETE', url, headers: idem });
      await call('delete 404', { method: 'DELETE', url: otherUrl, headers: auth() });
      done();
    });

    test('503 from unavailable storage', async () => {
      const { call, done } = session('503 from unavailable storage');
      const unavailable = () => Promise.reject(new StorageUnavailableError());
      const faulty = await faultyApp(backend, [
        [petRepository, 'list', unavailable],
        [petRepository, 'get', unavailable],
        [petRepository, 'create', unavailable],
        [petRepository, 'update', unavailable],
        [petRepository, 'delete', unavailable],
        [categoryRepository, 'list', unavailable],
      ]);
      try {
        const headers = bearer(faulty.key);
        await call('storage down', { url: '/v1/pets', headers }, faulty.app);
        await call(
          'storage down',
          { method: 'POST', url: '/v1/pets', headers, payload: { name: 'A', categoryId: 1 } },
          faulty.app,
        );
        await call('storage down', { url: '/v1/pets/1', headers }, faulty.app);
        await call('storage down', { url: '/v1/categories', headers }, faulty.app);
        await call(
          'storage down',
          { method: 'PATCH', url: '/v1/pets/1', headers, payload: { name: 'A' } },
          faulty.app,
        );
        await call('storage down', { method: 'DELETE', url: '/v1/pets/1', headers }, faulty.app);
      } finally {
        await faulty.close();
      }
      done();
    });

    // Each module's own drift test, from its fixture: it must produce every status the fixture lists.
    for (const [module, fixture] of FIXTURES) {
      const { drift } = fixture;
      if (!drift) continue;
      test(`${module} (its fixture's drift test)`, async () => {
        const { call, done } = sessionOf(module, fixture.driftStatuses ?? {});
        await drift({
          call,
          auth,
          app: ctx.app,
          database: ctx.database,
          now: () => ctx.clock.now,
          appendEvent: (type) => appendEventOf(ctx.database, type),
        });
        done();
      });
    }

    test('the drift tests together cover every documented operation and the expected status codes', () => {
      // Each module's fixture (src/modules/<module>/fixtures.ts) lists the statuses of its operations.
      const expected = EXPECTED_STATUSES;
      const planned = new Set([
        ...Object.values(DRIFT_COVERAGE).flatMap(coveragePairs),
        ...[...FIXTURES.values()].flatMap((fixture) =>
          fixture.drift ? coveragePairs(fixture.driftStatuses ?? {}) : [],
        ),
      ]);
      assert.deepEqual(
        coveragePairs(expected).filter((pair) => !planned.has(pair)),
        [],
        'some drift test is meant to produce each of these',
      );
      // Any operation added to the document must be exercised here too.
      const documented = Object.values(contract.doc.paths).flatMap((item) =>
        METHODS.map((m) => item[m]?.operationId).filter(Boolean),
      );
      for (const operationId of documented)
        assert.ok(operationId! in expected, `the drift test exercises ${operationId}`);
    });
  });
}
