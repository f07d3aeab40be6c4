/**
 * The served OpenAPI document as tools read it: Redocly's recommended rules and Spectral's `spectral:oas`
 * (through the repository's .spectral.yaml) report nothing, on the document served with and without
 * PUBLIC_URL; and the properties those tools and code generators rely on hold: bounds on every string,
 * array and integer, an `example` on every component schema that is valid against it, a real description
 * on every response, `Error.code` as the catalogue's enum, `info` with license and contact.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { errorCatalogueOf } from '../src/modules/declared.js';
import { MODULES } from '../src/modules/index.js';
import { createTestContext, sqliteMemory } from './helpers.js';

/** The one error catalogue: the HTTP layer's codes and every module's. */
const errorCatalogue = errorCatalogueOf(MODULES);

type Json = Record<string, unknown>;
const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/** The document a fresh app serves, with the given PUBLIC_URL (or none). */
async function servedDocument(publicUrl?: string): Promise<Json> {
  const ctx = await createTestContext(sqliteMemory, { config: { publicUrl } });
  try {
    const res = await ctx.app.inject({ url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    return res.json();
  } finally {
    await ctx.close();
  }
}

/** Every schema object in the document, with a JSON-pointer-ish path, for the bounds checks. */
function* schemas(node: unknown, path: string, inSchema = false): Generator<[string, Json]> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) yield* schemas(item, `${path}/${i}`, inSchema);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const object = node as Json;
  if (inSchema && typeof object.type === 'string') yield [path, object];
  for (const [key, value] of Object.entries(object)) {
    // Examples are data, not schemas.
    if (key === 'example' || key === 'examples') continue;
    const child = inSchema || key === 'schema' || path === '#/components/schemas';
    yield* schemas(value, `${path}/${key}`, child && !(inSchema && key === 'enum'));
  }
}

describe('the served OpenAPI document, as tools read it', () => {
  let dir: string;
  let relative: Json;
  let absolute: Json;
  const files: string[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
    relative = await servedDocument();
    // Not example.com: Redocly rightly warns about a server there.
    absolute = await servedDocument('https://pets.shelter.test');
    for (const [name, doc] of [
      ['relative.json', relative],
      ['absolute.json', absolute],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, JSON.stringify(doc, null, 2));
      files.push(file);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('Redocly lint (recommended rules) reports no error and no warning', async () => {
    const { stdout } = await run(bin('redocly'), ['lint', '--format=json', ...files], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }));
    // One JSON report per file, one after the other.
    const reports = JSON.parse(`[${stdout.trim().replace(/\}\s*\{/g, '},{')}]`) as {
      totals: Json;
      problems: { ruleId: string; message: string }[];
    }[];
    assert.equal(reports.length, files.length, stdout);
    for (const report of reports) {
      assert.deepEqual(
        report.problems.map((p) => `${p.ruleId}: ${p.message}`),
        [],
      );
      assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
    }
  });

  test('Spectral (spectral:oas, .spectral.yaml) reports nothing', async () => {
    const { stdout } = await run(
      bin('spectral'),
      [
        'lint',
        '--quiet',
        '--ruleset',
        join(root, '.spectral.yaml'),
        '--format',
        'json',
        '--fail-severity',
        'hint',
        ...files,
      ],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }));
    const problems = JSON.parse(stdout) as { code: string; message: string; path: string[] }[];
    assert.deepEqual(
      problems.map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`),
      [],
    );
  });

  test('servers: /v1 without PUBLIC_URL, <PUBLIC_URL>/v1 with it', () => {
    assert.deepEqual(
      (relative.servers as Json[]).map((s) => s.url),
      ['/v1'],
    );
    assert.deepEqual(
      (absolute.servers as Json[]).map((s) => s.url),
      ['https://pets.shelter.test/v1'],
    );
    // Everything else is the same document: production and staging differ only in PUBLIC_URL.
    assert.deepEqual({ ...absolute, servers: undefined }, { ...relative, servers: undefined });
  });

  test('info has a license and a contact', () => {
    const info = relative.info as Json;
    assert.equal(typeof (info.license as Json | undefined)?.name, 'string');
    assert.equal(typeof (info.contact as Json | undefined)?.name, 'string');
  });

  test('Error.code is the enum of the error catalogue', () => {
    const error = (relative.components as { schemas: Record<string, Json> }).schemas.Error!;
    const code = (error.properties as Record<string, Json>).code!;
    assert.deepEqual(code.enum, Object.keys(errorCatalogue));
  });

  test('every response has a real description', () => {
    for (const [path, item] of Object.entries(relative.paths as Record<string, Record<string, Json>>)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
          const where = `${method.toUpperCase()} ${path} ${status}`;
          assert.equal(typeof response.description, 'string', where);
          assert.notEqual(response.description, 'Default Response', where);
          assert.ok((response.description as string).length >= 5, where);
        }
      }
    }
  });

  test('every string, array and integer is bounded', () => {
    const unbounded: string[] = [];
    for (const [path, schema] of schemas(relative, '#')) {
      const fixed = 'enum' in schema || 'const' in schema;
      if (schema.type === 'string' && !fixed && typeof schema.maxLength !== 'number') unbounded.push(path);
      if (schema.type === 'array' && typeof schema.maxItems !== 'number') unbounded.push(path);
      if (
        schema.type === 'integer' &&
        !fixed &&
        (typeof schema.minimum !== 'number' || typeof schema.maximum !== 'number')
      )
        unbounded.push(path);
    }
    assert.deepEqual(unbounded, []);
  });

  test('every component schema has an example, valid against it', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    (addFormatsPlugin as unknown as (ajv: Ajv2020) => Ajv2020)(ajv);
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    ajv.addSchema(relative, 'openapi.json');
    const components = (relative.components as { schemas: Record<string, Json> }).schemas;
    for (const [name, schema] of Object.entries(components)) {
      assert.ok('example' in schema, `${name} has an example`);
      const validate = ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` });
      assert.ok(validate(schema.example), `${name}'s example: ${ajv.errorsText(validate.errors)}`);
    }
    // What "Try it out" pre-fills for createPet: a realistic pet, not a string generated from the pattern.
    assert.deepEqual(components.NewPet!.example, { name: 'Rex', categoryId: 1, status: 'available' });
  });
});
