/**
 * The storefront example (examples/storefront, `npm run storefront`) in headless Chromium (Debian's
 * `chromium`, driven by playwright-core): the example starts the built service on a fresh SQLite database,
 * seeds it, and serves its page from an origin of its own, which calls the API through CORS with the SDK's
 * browser bundle. The page is opened while the example is still setting up: it says it is starting, then opens
 * by itself. An adopter searches near Berlin, narrows to animals good with children, pages on, and
 * keeps only animals with photos instead, and opens one,
 * whose photos load. The screenshot of the open animal is the README's (docs/storefront.png).
 *
 * `npm test` builds first; run `npm run build` before running this file alone. Without /usr/bin/chromium
 * the suite is skipped with a notice, except under CI=true (.ci/run installs it).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { IN_CI, sqliteMemory } from './helpers.js';
import { baseEnv, environmentFor, ROOT, type Environment } from '../support/processes.js';

const CHROMIUM = '/usr/bin/chromium';
/** Enough pets that the search near Berlin, narrowed, still fills more than one page of 12. */
const SEED_PETS = 400;

const missing = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is not installed (apt-get install -y chromium)`;
if (missing && IN_CI) throw new Error(`CI=true requires the storefront browser test: ${missing}`);
if (missing) console.log(`# NOTICE: skipping the storefront browser test: ${missing}`);

/** The cards shown: pet id, name and the distance line. */
async function cards(page: Page): Promise<{ id: string; name: string; facts: string }[]> {
  return page.locator('#results .card').evaluateAll((nodes) =>
    nodes.map((node) => ({
      id: node.getAttribute('data-pet-id') ?? '',
      name: node.querySelector('h2')?.textContent ?? '',
      facts: node.querySelector('p')?.textContent ?? '',
    })),
  );
}

const kmOf = (facts: string): number => Number(/([\d.]+) km away/.exec(facts)?.[1] ?? NaN);

/** Waits until the page has finished what the last action started (the script marks the body). */
async function settled(page: Page): Promise<void> {
  await page.locator('body[data-state="ready"]').waitFor();
}

/** naturalWidth of every image in `selector`, once each has loaded or failed. */
async function imageWidths(page: Page, selector: string): Promise<number[]> {
  return page.locator(selector).evaluateAll((images) =>
    Promise.all(
      (images as HTMLImageElement[]).map((image) =>
        image.complete
          ? image.naturalWidth
          : new Promise<number>((resolve) => {
              image.addEventListener('load', () => resolve(image.naturalWidth), { once: true });
              image.addEventListener('error', () => resolve(0), { once: true });
            }),
      ),
    ),
  );
}

describe('the storefront example in headless Chromium', { skip: missing }, () => {
  let environment: Environment;
  let example: ChildProcess;
  let output = '';
  let origin: string;
  /** Resolves when the example says its setup has ended. */
  let setupEnded: Promise<string>;
  let browser: Browser;
  let page: Page;
  const failures: string[] = [];

  before(
    async () => {
      // The browser first, so that the page can be opened while the example is still setting up.
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
      page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      page.on('pageerror', (error) => failures.push(error.message));
      page.on('requestfailed', (request) =>
        failures.push(`${request.url()}: ${request.failure()?.errorText}`),
      );
      environment = await environmentFor(sqliteMemory);
      example = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'examples/storefront/server.ts')], {
        cwd: ROOT,
        env: baseEnv({ ...environment.env, STOREFRONT_PORT: '0', STOREFRONT_SEED_PETS: String(SEED_PETS) }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const exited = new Promise<never>((_, reject) =>
        example.once('exit', (code) => reject(new Error(`the example exited (${code}): ${output}`))),
      );
      const line = (pattern: RegExp) =>
        Promise.race([
          exited,
          new Promise<string>((resolve) => {
            const look = () => {
              const match = pattern.exec(output);
              if (match) {
                example.stderr!.off('data', look);
                resolve(match[1]!);
              }
            };
            example.stderr!.on('data', look);
            look();
          }),
        ]);
      example.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      // Announced as soon as the site listens, before the migrations, the key, the service and the seed.
      origin = await line(/^Starting the storefront at (http:\/\/\S+)\/ /m);
      setupEnded = line(/^Storefront: (http:\/\/\S+)\/$/m);
      setupEnded.catch(() => undefined);
      // Only so that an example that never announces itself fails the suite instead of stalling it.
    },
    { timeout: 120_000 },
  );

  after(async () => {
    await browser?.close();
    if (example && example.exitCode === null) {
      example.kill('SIGTERM');
      await once(example, 'exit');
    }
    await environment?.cleanup();
  });

  test('opened during the setup, the page says it is starting, then opens by itself', async () => {
    const early = await page.goto(`${origin}/`);
    // The setup (migrations, a key, the service, seeding 400 pets with photos) takes seconds; the page was
    // asked for as soon as the site listened.
    assert.equal(early?.status(), 503);
    assert.equal(early?.headers()['retry-after'], '5');
    assert.match((await page.locator('[role="status"]').textContent()) ?? '', /starting/);
    const config = await page.request.get(`${origin}/config.js`);
    assert.equal(config.status(), 503, 'no half-made config while starting');
    // The seed's length depends on the machine: a generous bound, only so that a hang fails.
    await page.locator('body[data-state="ready"]').waitFor({ timeout: 180_000 });
    assert.equal(await setupEnded, origin);
    assert.deepEqual(failures, [], 'the page met no error on its way');
  });

  test('the first search near Berlin shows photo cards, nearest first, through CORS', async () => {
    const shown = await cards(page);
    assert.equal(shown.length, 12, `a full first page: ${await page.locator('#status').textContent()}`);
    const distances = shown.map((card) => kmOf(card.facts));
    assert.ok(
      distances.every((km) => km <= 50),
      `within 50 km: ${distances.join(', ')}`,
    );
    assert.deepEqual(
      distances,
      [...distances].sort((a, b) => a - b),
      'nearest first',
    );
    const widths = await imageWidths(page, '#results .card img');
    assert.ok(widths.length > 0, 'some cards have a photo');
    assert.ok(
      widths.every((width) => width > 0),
      `every card photo loaded: ${widths.join(', ')}`,
    );
    assert.deepEqual(failures, []);
  });

  test('a filter narrows the search, and the next page follows on from the first', async () => {
    const before = await cards(page);
    await page.locator('input[name="goodWithChildren"]').check();
    await page.locator('#search button[type="submit"]').click();
    await settled(page);
    const first = await cards(page);
    assert.equal(first.length, 12);
    assert.notDeepEqual(
      first.map((card) => card.id),
      before.map((card) => card.id),
      'the filter changed the results',
    );
    assert.equal(await page.locator('#next').isVisible(), true, 'there is a next page');
    await page.locator('#next').click();
    await settled(page);
    const second = await cards(page);
    assert.ok(second.length > 0, 'the second page has animals');
    const ids = new Set(first.map((card) => card.id));
    assert.ok(
      second.every((card) => !ids.has(card.id)),
      'no animal shown twice',
    );
    assert.ok(
      kmOf(second[0]!.facts) >= kmOf(first.at(-1)!.facts),
      `page 2 starts where page 1 ended: ${second[0]!.facts} after ${first.at(-1)!.facts}`,
    );
    assert.deepEqual(failures, []);
  });

  test('"with photos" shows only pictured animals; opening one shows all its photos and its profile', async () => {
    await page.locator('input[name="goodWithChildren"]').uncheck();
    await page.locator('input[name="hasPhotos"]').check();
    await page.locator('#search button[type="submit"]').click();
    await settled(page);
    const shown = await cards(page);
    assert.ok(shown.length > 0, 'pictured animals near Berlin');
    const widths = await imageWidths(page, '#results .card img');
    assert.equal(widths.length, shown.length, 'every card has a photo');
    assert.ok(
      widths.every((width) => width > 0),
      `every card photo loaded: ${widths.join(', ')}`,
    );
    const withPhoto = page.locator('#results .card').first();
    const name = await withPhoto.locator('h2').textContent();
    await withPhoto.click();
    await settled(page);
    const dialog = page.locator('dialog#animal');
    assert.equal(await dialog.isVisible(), true);
    assert.equal(await dialog.locator('h2').textContent(), name);
    const photos = await imageWidths(page, 'dialog#animal .photos img');
    assert.equal(photos.length, 2, 'the seed gives each pictured animal two photos');
    assert.ok(
      photos.every((width) => width > 0),
      `every photo loaded: ${photos.join(', ')}`,
    );
    const profile = await dialog.locator('dl').textContent();
    assert.match(profile ?? '', /Breed/);
    assert.match(profile ?? '', /Good with children/);
    await page.screenshot({ path: join(ROOT, 'docs', 'storefront.png') });
    assert.deepEqual(failures, []);
  });
});
