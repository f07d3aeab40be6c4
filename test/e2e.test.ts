/**
 * End to end, as a user: the built CLI (`node dist/cli.js`, what `npm start` and the `pet-adoption` bin
 * run) serving on a real socket, keys made with the CLI, requests with fetch, signals to stop it.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { allScopes } from '../src/modules/accounts/scopes.js';
import type { Pet } from '../src/modules/pets/schemas.js';
import { backends } from './helpers.js';
import {
  cli,
  CLI,
  environmentFor,
  killAll,
  ROOT,
  serve,
  waitForExit,
  type Environment,
  type Server,
} from '../support/processes.js';

type ErrorBody = { code: string; message: string; status: number };

const KEY_LINE = /^pas_[0-9A-Za-z]{38}$/;

/** Starts a server; the first-key hint is written together with the announcement serve() waits for. */
async function startServer(env: Record<string, string>): Promise<Server> {
  return serve('server', env);
}

async function api(
  base: string,
  path: string,
  key: string | undefined,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

function lastLine(text: string): string {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.at(-1) ?? '';
}

const FRESH_HINT = /new database/i;

for (const backend of await backends()) {
  describe(`end to end [${backend.name}]`, () => {
    let environment: Environment;
    let env: Record<string, string>;
    let server: Server;
    let key: string;
    let jsonKey: { key: string; id: string; account: string; plan: string; scopes: string[] };

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      env = environment.env;
    });

    after(async () => {
      await killAll();
      await environment?.cleanup();
    });

    test('the build output exists and is the package bin', () => {
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
      assert.equal(join(ROOT, pkg.bin['pet-adoption']), CLI);
      assert.match(readFileSync(CLI, 'utf8'), /^#!\/usr\/bin\/env node/);
    });

    test('serve on a fresh database announces its address and prints the first-key hint once', async () => {
      server = await startServer(env);
      assert.match(server.base, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const stderr = server.stderr();
      assert.equal(stderr.match(/listening on/g)?.length, 1);
      assert.equal(stderr.match(FRESH_HINT)?.length, 1, stderr);
      assert.match(stderr, /keys create --account/);
      assert.ok(
        stderr.includes(server.base.replace(/\/v1$/, '').replace(/^http:\/\//, '')),
        'the hint names the real address',
      );
    });

    test('keys create prints the key alone on the last line of stdout; --json prints one object', async () => {
      const created = await cli(['keys', 'create', '--account', 'e2e'], env);
      assert.equal(created.code, 0, created.stderr);
      key = lastLine(created.stdout);
      assert.match(key, KEY_LINE);
      assert.ok(created.stdout.endsWith(`${key}\n`), 'the key is the whole last line');

      const json = await cli(['keys', 'create', '--account', 'e2e-json', '--plan', 'pro', '--json'], env);
      assert.equal(json.code, 0, json.stderr);
      jsonKey = JSON.parse(json.stdout.trim());
      assert.match(jsonKey.key, KEY_LINE);
      assert.match(jsonKey.id, /\S/);
      assert.equal(jsonKey.account, 'e2e-json');
      assert.equal(jsonKey.plan, 'pro');
      assert.deepEqual(jsonKey.scopes, [...allScopes()], 'without --scopes: every scope, listed');
    });

    test('keys create --scopes narrows the key (implications listed); the API answers 403 for the rest', async () => {
      const json = await cli(
        ['keys', 'create', '--account', 'e2e-scoped', '--scopes', 'orders:read, pets:write', '--json'],
        env,
      );
      assert.equal(json.code, 0, json.stderr);
      const created = JSON.parse(json.stdout.trim()) as { key: string; scopes: string[] };
      assert.deepEqual(created.scopes, ['pets:read', 'pets:write', 'orders:read']);
      assert.equal(
        (await api(server.base, '/pets', created.key)).status,
        200,
        'pets:write implies pets:read',
      );

      const human = await cli(['keys', 'create', '--account', 'e2e-scoped', '--scopes', 'orders:read'], env);
      assert.equal(human.code, 0, human.stderr);
      assert.match(human.stdout, /scopes: orders:read\./);
      const denied = await api(server.base, '/pets', lastLine(human.stdout));
      assert.equal(denied.status, 403);
      assert.equal((denied.body as ErrorBody).code, 'insufficient_scope');
      assert.match((denied.body as ErrorBody).message, /pets:read/);
      assert.equal(
        denied.headers.get('www-authenticate'),
        'Bearer realm="pet-adoption", error="insufficient_scope", scope="pets:read"',
      );
    });

    test('keys create --scopes refuses an unknown scope or an empty list with exit 2, creating nothing', async () => {
      const cases: [string, RegExp][] = [
        ['pets:read,pets:fly', /unknown scope "pets:fly"/],
        ['PETS:READ', /unknown scope "PETS:READ"/],
        ['', /at least one scope/],
        [' , ', /at least one scope/],
      ];
      for (const [scopes, message] of cases) {
        const result = await cli(['keys', 'create', '--account', 'e2e-refused', '--scopes', scopes], env);
        assert.equal(result.code, 2, `${scopes}: ${result.stderr}`);
        assert.match(result.stderr, message);
        assert.ok(result.stderr.includes(allScopes().join(', ')), `names the valid scopes: ${result.stderr}`);
        assert.equal(result.stdout, '');
      }
      const listed = await cli(['keys', 'list', '--account', 'e2e-refused', '--json'], env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(JSON.parse(listed.stdout), [], 'no key was created');
    });

    test('create, list and get pets over the real socket', async () => {
      const unauthorized = await api(server.base, '/pets', undefined);
      assert.equal(unauthorized.status, 401);
      assert.equal((unauthorized.body as ErrorBody).code, 'missing_api_key');
      assert.match(String(unauthorized.headers.get('www-authenticate')), /^Bearer/);

      const empty = await api(server.base, '/pets', key);
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, []);
      assert.match(String(empty.headers.get('x-ratelimit-limit')), /^\d+$/);
      assert.ok(empty.headers.get('x-request-id'));

      const created = await api(server.base, '/pets', key, {
        method: 'POST',
        body: { name: 'Socket Rex', categoryId: 1 },
      });
      assert.equal(created.status, 201);
      const pet = created.body as Pet;
      assert.equal(pet.name, 'Socket Rex');
      assert.equal(pet.status, 'available');
      const location = created.headers.get('location');
      assert.equal(location, `/v1/pets/${pet.id}`);

      const fetched = await api(new URL(server.base).origin, location!, key);
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.body, created.body);
      assert.ok(fetched.headers.get('sunset'));

      const listed = await api(server.base, '/pets?status=available', jsonKey.key);
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body, [created.body]);

      const categories = await api(server.base, '/categories', key);
      assert.equal(categories.status, 200);
      assert.equal((categories.body as unknown[]).length, 7);

      const doc = await api(server.base, '/openapi.json', undefined);
      assert.equal(doc.status, 200);
      const health = await fetch(`${new URL(server.base).origin}/healthz`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    });

    test('keys list shows the keys but never their secrets', async () => {
      const listed = await cli(['keys', 'list'], env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(listed.stdout.includes(jsonKey.id), listed.stdout);
      assert.ok(listed.stdout.includes('e2e'));
      assert.ok(!listed.stdout.includes(key), 'no secret in keys list');
      assert.ok(!listed.stdout.includes(jsonKey.key), 'no secret in keys list');

      const json = await cli(['keys', 'list', '--account', 'e2e-json', '--json'], env);
      assert.equal(json.code, 0, json.stderr);
      const rows = JSON.parse(json.stdout.trim()) as { id: string; account: string; scopes: string[] }[];
      assert.deepEqual(
        rows.map((r) => [r.id, r.account, r.scopes]),
        [[jsonKey.id, 'e2e-json', [...allScopes()]]],
      );
      assert.ok(!json.stdout.includes(jsonKey.key));

      const scopedJson = await cli(['keys', 'list', '--account', 'e2e-scoped', '--json'], env);
      const scoped = JSON.parse(scopedJson.stdout.trim()) as { id: string; scopes: string[] }[];
      assert.deepEqual(scoped.map((r) => r.scopes).sort(), [
        ['orders:read'],
        ['pets:read', 'pets:write', 'orders:read'],
      ]);
      const line = (id: string) => listed.stdout.split('\n').find((l) => l.startsWith(`${id} `)) ?? '';
      assert.match(line(jsonKey.id), /\ball scopes$/, listed.stdout);
      for (const row of scoped)
        assert.ok(line(row.id).endsWith(`scopes ${row.scopes.join(',')}`), listed.stdout);
    });

    test('keys revoke takes effect on the next request', async () => {
      assert.equal((await api(server.base, '/pets', jsonKey.key)).status, 200);
      const revoked = await cli(['keys', 'revoke', jsonKey.id], env);
      assert.equal(revoked.code, 0, revoked.stderr);
      const res = await api(server.base, '/pets', jsonKey.key);
      assert.equal(res.status, 401);
      assert.equal((res.body as ErrorBody).code, 'revoked_api_key');
      assert.equal((await api(server.base, '/pets', key)).status, 200, 'other keys still work');

      const unknown = await cli(['keys', 'revoke', 'key_doesnotexist'], env);
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /key_doesnotexist/);
      assert.equal(unknown.stdout, '');
    });

    test('accounts unban: a known account exits 0, an unknown one fails with a message on stderr', async () => {
      const ok = await cli(['accounts', 'unban', 'e2e'], env);
      assert.equal(ok.code, 0, ok.stderr);
      const unknown = await cli(['accounts', 'unban', 'no-such-account'], env);
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /no-such-account/);
    });

    test('bad configuration stops the process with a message naming the variable', async () => {
      const cases: [Record<string, string>, string][] = [
        [{ PORT: 'abc' }, 'PORT'],
        [{ PORT: '70000' }, 'PORT'],
        [{ DATABASE_URL: 'mysql://localhost/db' }, 'DATABASE_URL'],
        [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
        [{ REDIS_URL: 'http://localhost' }, 'REDIS_URL'],
      ];
      for (const [bad, variable] of cases) {
        const result = await cli(['serve'], { ...env, ...bad });
        assert.notEqual(result.code, 0, `${variable}: ${result.stderr}`);
        assert.ok(result.stderr.includes(variable), `${variable}: ${result.stderr}`);
        assert.doesNotMatch(result.stderr, /listening on/);
      }
    });

    test('SIGTERM: the server exits 0 promptly and keeps what it acknowledged', async () => {
      const created = await api(server.base, '/pets', key, {
        method: 'POST',
        body: { name: 'Before SIGTERM', categoryId: 2 },
      });
      assert.equal(created.status, 201);
      const pet = created.body as Pet;
      server.child.kill('SIGTERM');
      const exit = await waitForExit(server.child);
      assert.deepEqual(exit, { code: 0, signal: null });

      server = await startServer(env);
      assert.doesNotMatch(server.stderr(), FRESH_HINT, 'no first-key hint on an existing database');
      const fetched = await api(server.base, `/pets/${pet.id}`, key);
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.body, pet);
    });

    test('kill -9: a 201 acknowledged before the kill survives a restart on the same database', async () => {
      const created = await api(server.base, '/pets', key, {
        method: 'POST',
        body: { name: 'Before kill -9', categoryId: 3 },
      });
      assert.equal(created.status, 201);
      const pet = created.body as Pet;
      server.child.kill('SIGKILL');
      const exit = await waitForExit(server.child);
      assert.equal(exit.signal, 'SIGKILL');

      server = await startServer(env);
      assert.doesNotMatch(server.stderr(), FRESH_HINT);
      const fetched = await api(server.base, `/pets/${pet.id}`, key);
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.body, pet);
      const names = ((await api(server.base, '/pets?limit=100', key)).body as Pet[]).map((p) => p.name);
      assert.deepEqual(names, ['Socket Rex', 'Before SIGTERM', 'Before kill -9']);

      server.child.kill('SIGTERM');
      assert.deepEqual(await waitForExit(server.child), { code: 0, signal: null });
    });
  });
}
