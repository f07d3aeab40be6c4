/**
 * The docs page in a real browser (headless Chromium, Debian's `chromium`, driven by playwright-core): the
 * built service started as `npm start` runs it, bound to a non-loopback address of this machine and opened
 * over plain http at that address, as a colleague on the network would. The page shows every operation of
 * the OpenAPI document, takes a real key (made with the CLI) through "Authorize", runs listPets and
 * createPet through "Try it out" (createPet pre-filled with the schema's example), and never asks any
 * other host for anything. A screenshot goes to test-artifacts/ (ignored by git).
 *
 * `npm test` builds first; run `npm run build` before running this file alone. Without /usr/bin/chromium
 * the suite is skipped with a notice, except under CI=true (.ci/run installs it).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { IN_CI, sqliteMemory } from './helpers.js';
import {
  cli,
  environmentFor,
  killAll,
  ROOT,
  serve,
  type Environment,
  type Server,
} from '../support/processes.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');

/** An IPv4 address of this machine other than loopback, or undefined when it has none. */
function nonLoopbackAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return undefined;
}

const address = nonLoopbackAddress();
const missing = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is not installed (apt-get install -y chromium)`
  : address === undefined
    ? 'this machine has no non-loopback IPv4 address'
    : undefined;
if (missing && IN_CI) throw new Error(`CI=true requires the docs browser test: ${missing}`);
if (missing) console.log(`# NOTICE: skipping the docs browser test: ${missing}`);

describe(
  'the docs page in headless Chromium, over plain http on a non-loopback address',
  { skip: missing },
  () => {
    let environment: Environment;
    let server: Server;
    let browser: Browser;
    let page: Page;
    let origin: string;
    let key: string;
    let operationIds: string[];
    /** Every URL the page asked for. */
    const requested: string[] = [];

    before(async () => {
      environment = await environmentFor(sqliteMemory);
      // keys create works on an existing database only; migrate creates it.
      const migrated = await cli(['migrate'], environment.env);
      assert.equal(migrated.code, 0, migrated.stderr);
      ({ stdout: key } = await cli(['keys', 'create', '--account', 'docs-browser'], environment.env).then(
        (result) => {
          assert.equal(result.code, 0, result.stderr);
          return { stdout: result.stdout.trim().split('\n').at(-1)! };
        },
      ));
      server = await serve('docs', { ...environment.env, HOST: address! });
      origin = `http://${address}:${new URL(server.origin).port}`;
      const doc = (await (await fetch(`${origin}/v1/openapi.json`)).json()) as {
        paths: Record<string, Record<string, { operationId: string }>>;
      };
      operationIds = Object.values(doc.paths).flatMap((item) =>
        Object.values(item).map((op) => op.operationId),
      );
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--no-first-run',
        ],
      });
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.on('request', (request) => requested.push(request.url()));
    });

    after(async () => {
      await browser?.close();
      await killAll();
      await environment?.cleanup();
    });

    test('the page loads, titled "Pet Adoption Service API", and shows every operation', async () => {
      const response = await page.goto(`${origin}/v1/docs`);
      assert.equal(response?.status(), 200);
      assert.equal(await page.title(), 'Pet Adoption Service API');
      await page.locator('.opblock').first().waitFor();
      assert.ok(operationIds.length >= 20, `the document lists the operations (${operationIds.length})`);
      for (const operationId of operationIds) {
        // With deepLinking each operation's block is `operations-<tag>-<operationId>`.
        assert.equal(await page.locator(`[id$="-${operationId}"].opblock`).count(), 1, operationId);
      }
    });

    test('"Authorize" takes a real key', async () => {
      await page.locator('.auth-wrapper button.authorize').click();
      const dialog = page.locator('.modal-ux');
      await dialog.locator('input').first().fill(key);
      await dialog.locator('button.authorize').click();
      await dialog.getByText('Authorized', { exact: false }).first().waitFor();
      await dialog.locator('button.btn-done').click();
    });

    /** Expands an operation, presses "Try it out" and "Execute", and returns the API's answer. */
    async function tryItOut(
      operationId: string,
      method: string,
      before?: (block: ReturnType<Page['locator']>) => Promise<void>,
    ) {
      const block = page.locator(`[id$="-${operationId}"].opblock`);
      await block.locator('.opblock-summary').first().click();
      await block.locator('button.try-out__btn').click();
      await before?.(block);
      const [answer] = await Promise.all([
        page.waitForResponse(
          (r) => r.request().method() === method && new URL(r.url()).pathname === '/v1/pets',
        ),
        block.locator('button.execute').click(),
      ]);
      // The page shows the status it received.
      const shown = block.locator('.live-responses-table tr.response .response-col_status').first();
      await shown.waitFor();
      assert.equal((await shown.innerText()).trim(), String(answer.status()));
      await shown.scrollIntoViewIfNeeded();
      return answer;
    }

    test('listPets through "Try it out": 200 with the key', async () => {
      const answer = await tryItOut('listPets', 'GET');
      assert.equal(answer.status(), 200);
      assert.equal(answer.request().headers().authorization, `Bearer ${key}`);
      assert.ok(Array.isArray(await answer.json()));
    });

    test('createPet through "Try it out": pre-filled with the example, 201', async () => {
      const answer = await tryItOut('createPet', 'POST', async (block) => {
        const body = await block.locator('textarea.body-param__text').inputValue();
        assert.deepEqual(JSON.parse(body), { name: 'Rex', categoryId: 1, status: 'available' });
      });
      assert.equal(answer.status(), 201, await answer.text());
      const pet = (await answer.json()) as { id: number; name: string };
      assert.equal(pet.name, 'Rex');
      assert.equal(answer.headers().location, `/v1/pets/${pet.id}`);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'docs-create-pet.png') });
    });

    test('the page asked no other host for anything', () => {
      assert.ok(requested.length > 3, `the page made its requests (${requested.length})`);
      const elsewhere = requested.filter((url) => new URL(url).origin !== origin);
      assert.deepEqual(elsewhere, []);
    });
  },
);
