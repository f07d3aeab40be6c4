/**
 * At-least-once across a crash, over real processes: the built server delivers to a receiver on 127.0.0.1
 * that hangs on its first deliveries, is SIGKILLed while they are in flight (and more are queued), and is
 * restarted on the same database. Every event of the feed must then reach the receiver, the ones that were
 * in flight a second time (their leases expired; WEBHOOK_LEASE_MS is short here so that takes a second).
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { backends } from './helpers.js';
import {
  cli,
  CLI,
  environmentFor,
  killAll,
  serve,
  terminate,
  waitForExit,
  type Environment,
  type Server,
} from '../support/processes.js';
import { Receiver, type ReceivedRequest } from './support/webhooks.js';

const PETS = 20;
/** The dispatcher's default per-endpoint concurrency: how many deliveries the receiver can hold at once. */
const IN_FLIGHT = 2;

async function call(server: Server, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as unknown };
}

const ids = (requests: ReceivedRequest[]) => requests.map((r) => r.headers['webhook-id']!);

for (const backend of await backends()) {
  describe(`webhooks across kill -9 [${backend.name}]`, () => {
    let environment: Environment;
    let env: Record<string, string>;
    let receiver: Receiver;
    let url: string;

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      receiver = new Receiver();
      url = await receiver.start();
      env = {
        ...environment.env,
        WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
        WEBHOOK_POLL_MS: '50',
        WEBHOOK_LEASE_MS: '1000',
      };
    });
    after(async () => {
      await killAll();
      await receiver?.close();
      await environment?.cleanup();
    });

    test(
      'deliveries in flight when the process dies are sent again after a restart',
      { timeout: 90_000 },
      async () => {
        const migrated = await cli(['migrate'], env);
        assert.equal(migrated.code, 0, migrated.stderr);
        const created = await cli(['keys', 'create', '--account', 'hooks', '--json'], env);
        assert.equal(created.code, 0, created.stderr);
        const { key } = JSON.parse(created.stdout.trim()) as { key: string };

        let server = await serve('first', env);
        const endpoint = await call(server, key, 'POST', '/webhook-endpoints', { url, events: ['*'] });
        assert.equal(endpoint.status, 201, JSON.stringify(endpoint.json));
        // The first deliveries never get an answer: they stay in flight until the process dies.
        receiver.answers.push(...Array.from({ length: IN_FLIGHT }, () => ({ status: 0, hang: true })));
        for (let i = 0; i < PETS; i++) {
          const pet = await call(server, key, 'POST', '/pets', { name: `Crash ${i}`, categoryId: 1 });
          assert.equal(pet.status, 201, JSON.stringify(pet.json));
        }
        const hung = ids(await receiver.waitFor(IN_FLIGHT)).slice(0, IN_FLIGHT);
        assert.equal(receiver.answers.length, 0, 'every hanging answer was taken');

        server.child.kill('SIGKILL');
        assert.equal((await waitForExit(server.child)).signal, 'SIGKILL');

        server = await serve('restarted', env);
        const feed = await call(server, key, 'GET', '/events?limit=100');
        assert.equal(feed.status, 200);
        const events = (feed.json as { id: string; type: string }[]).map((e) => e.id);
        assert.equal(events.length, PETS, 'one pet.created per pet');
        assert.ok(
          hung.every((id) => events.includes(id)),
          'the hung deliveries carried feed events',
        );

        // The guard is the test's timeout: wait until every event arrived, the hung ones twice.
        await receiver.waitUntil((requests) => {
          const seen = ids(requests);
          return (
            events.every((id) => seen.includes(id)) &&
            hung.every((id) => seen.filter((s) => s === id).length >= 2)
          );
        });

        const exit = await terminate(server);
        assert.equal(exit.code, 0, server.output());
      },
    );
  });
}
