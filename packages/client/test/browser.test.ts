/**
 * The built client in a browser's shoes: bundled by esbuild for the browser platform (a Node built-in
 * anywhere in it, or in standardwebhooks, fails the bundle) and run in a VM context that has only web
 * platform globals (no process, Buffer or require), where it pages through a list over a fetch that
 * answers like the service and verifies a signed delivery. `npm test` builds the client first.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { test } from 'node:test';
import { build } from 'esbuild';

const ENTRY = fileURLToPath(new URL('../dist/index.js', import.meta.url));

test('bundled for browsers, it runs with web globals only: lists across pages and verifies a webhook', async () => {
  const bundle = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'PetAdoption',
    write: false,
    logLevel: 'silent',
  });
  const requests: string[] = [];
  const pages: Record<string, { body: unknown[]; link?: string }> = {
    '/v1/pets?limit=100': { body: [{ id: 1 }], link: '</v1/pets?limit=100&cursor=b>; rel="next"' },
    '/v1/pets?limit=100&cursor=b': { body: [{ id: 2 }] },
  };
  const browserFetch = async (input: string, init: { headers: Record<string, string> }) => {
    const url = new URL(input);
    requests.push(`${url.pathname}${url.search} ${init.headers.authorization}`);
    const page = pages[url.pathname + url.search]!;
    return new Response(JSON.stringify(page.body), {
      headers: { 'content-type': 'application/json', ...(page.link ? { link: page.link } : {}) },
    });
  };
  const context = vm.createContext({
    fetch: browserFetch,
    location: { href: 'https://shop.example/adopt/' },
    URL,
    URLSearchParams,
    Headers,
    Response,
    TextEncoder,
    TextDecoder,
    crypto: globalThis.crypto,
    atob,
    btoa,
    setTimeout,
    clearTimeout,
    console,
  });
  vm.runInContext(bundle.outputFiles[0]!.text, context);
  const secret = Buffer.from('0123456789abcdef0123456789abcdef');
  const body = JSON.stringify({ id: 'evt_1', type: 'pet.created', timestamp: 'now', data: {} });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', secret).update(`evt_1.${timestamp}.${body}`).digest('base64');
  const result = (await vm.runInContext(
    `(async () => {
      const client = new PetAdoption.PetAdoptionClient({ apiKey: 'pas_browser', baseUrl: '/' });
      const ids = [];
      for await (const pet of client.pets.list()) ids.push(pet.id);
      const event = client.webhooks.verify(${JSON.stringify(body)}, {
        'webhook-id': 'evt_1', 'webhook-timestamp': '${timestamp}', 'webhook-signature': 'v1,${signature}',
      }, 'whsec_${secret.toString('base64')}');
      let tampered = false;
      try { client.webhooks.verify('{}', { 'webhook-id': 'evt_1', 'webhook-timestamp': '${timestamp}', 'webhook-signature': 'v1,${signature}' }, 'whsec_${secret.toString('base64')}'); }
      catch (e) { tampered = e instanceof PetAdoption.WebhookVerificationError; }
      return JSON.stringify({ ids, base: client.baseUrl, type: event.type, tampered });
    })()`,
    context,
  )) as string;
  assert.deepEqual(JSON.parse(result), {
    ids: [1, 2],
    base: 'https://shop.example/v1',
    type: 'pet.created',
    tampered: true,
  });
  assert.deepEqual(requests, [
    '/v1/pets?limit=100 Bearer pas_browser',
    '/v1/pets?limit=100&cursor=b Bearer pas_browser',
  ]);
});
