/**
 * The client's generated types against the service: regenerating them from the document the app serves
 * (and the error catalogue) must give exactly the committed files. When this fails, run
 * `npm run generate:client` and commit the result (and adapt the client if its compile then breaks).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERROR_CODES } from '@pet-adoption/client';
import { errorCatalogueOf } from '../src/modules/declared.js';
import { MODULES } from '../src/modules/index.js';
import { ERROR_CODES_FILE, generate, SCHEMA_FILE } from '../packages/client/scripts/generate.js';

/** The one error catalogue: the HTTP layer's codes and every module's. */
const errorCatalogue = errorCatalogueOf(MODULES);

test('the committed client types are what the service document generates (no drift)', async () => {
  const { schema, errorCodes } = await generate();
  assert.ok(
    readFileSync(SCHEMA_FILE, 'utf8') === schema,
    `${SCHEMA_FILE} differs from the service's OpenAPI document: run npm run generate:client`,
  );
  assert.ok(
    readFileSync(ERROR_CODES_FILE, 'utf8') === errorCodes,
    `${ERROR_CODES_FILE} differs from src/http/errors.ts: run npm run generate:client`,
  );
});

test('the built client exports every catalogue code, and only those', () => {
  assert.deepEqual([...ERROR_CODES].sort(), Object.keys(errorCatalogue).sort());
});

test('every operation of the document has a client method', async () => {
  const source = ['resources.ts', 'catalogue.ts', 'applications.ts']
    .map((file) => readFileSync(new URL(`../packages/client/src/${file}`, import.meta.url), 'utf8'))
    .join('\n');
  const { schema } = await generate();
  const operations = [...schema.matchAll(/^ {4}(\w+): operations\['(\w+)'\];$/gm)].map((m) => m[2]!);
  // The client's operation strings (`'GET /pets/{petId}'`…) against the document's paths and methods.
  const paths = [...schema.matchAll(/^ {2}'(\/[^']*)': \{\n([\s\S]*?)^ {2}\};/gm)].flatMap(([, path, body]) =>
    [...body!.matchAll(/^ {4}(get|put|post|patch|delete): operations\['(\w+)'\];$/gm)].map(
      ([, method, id]) => ({
        id: id!,
        call: `${method!.toUpperCase()} ${path}`,
      }),
    ),
  );
  assert.equal(paths.length, new Set(operations).size);
  const missing = paths.filter(({ call }) => {
    const [method, path] = call.split(' ');
    // Order actions share one template in the client: POST /store/orders/{orderId}/${action}.
    const action = /^\/store\/orders\/\{orderId\}\/(\w+)$/.exec(path!)?.[1];
    return action
      ? !source.includes(`approve(orderId`) || !source.includes(`${action}(orderId`)
      : !source.includes(`'${method} ${path}'`);
  });
  assert.deepEqual(missing, [], 'operations without a client method');
});
