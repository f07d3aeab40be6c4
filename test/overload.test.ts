/**
 * Overload protection (DESIGN 4.7), triggered deterministically: a small OVERLOAD_MAX_IN_FLIGHT and pet
 * creations held inside the real repository (a fault that waits, then makes the real call) fill the
 * in-flight budget; everything beyond it is refused with `503 overloaded` before any key lookup, while
 * /healthz answers and /readyz reports the shedding. Releasing the held creations ends the load: every
 * acknowledged pet is there and requests are served again. On every backend. How fast any of this happens
 * is the benchmark's business (`npm run bench -- overload`), not this suite's.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startHealthListener } from '../src/http/health-listener.js';
import {
  BUDGET_WINDOW_MS,
  INITIAL_IN_FLIGHT_BUDGET,
  MAX_QUEUED_MS,
  MAX_REFUSED_CONNECTION_PAUSE_MS,
  MIN_IN_FLIGHT_BUDGET,
  REFUSED_CONNECTION_PAUSE_MS,
  SHEDDING_WINDOW_MS,
} from '../src/http/overload.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { petRepository, type PetRepository } from '../src/modules/pets/repository.js';
import { backends, bearer, type Backend } from './helpers.js';
import { assertErrorShape } from './support/assertions.js';
import { faultyApp, type FaultyApp } from './support/faults.js';
import { keptAliveAnswers } from './support/raw-http.js';

const LIMIT = 3;
const FLOOD = 24;

function assertOverloaded(res: LightMyRequestResponse, label: string): void {
  assertErrorShape(res, 503, 'overloaded', label);
  assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/, `${label}: Retry-After`);
  // Kept alive: a client that reconnected after every refusal would cost more than the refusal.
  assert.notEqual(res.headers.connection, 'close', `${label}: the refused connection is kept`);
}

/** `POST /v1/pets` on `target` with its key. */
function createPetOn(target: FaultyApp, name: string): Promise<LightMyRequestResponse> {
  return target.app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: bearer(target.key),
    payload: { name, categoryId: 1, status: 'available' },
  });
}

/** An app whose in-flight budget holds one request. */
function oneInFlightApp(backend: Backend): Promise<FaultyApp> {
  return faultyApp(backend, [], { overloadMaxInFlight: 1, unauthenticatedPerMinute: 100_000 });
}

/** Listens on a free port; a kept-alive raw connection to it on each call, recorded in `sockets` to destroy. */
async function keptConnections(
  target: FaultyApp,
  sockets: Socket[],
): Promise<() => Promise<{ socket: Socket; answers: ReturnType<typeof keptAliveAnswers> }>> {
  await target.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = target.app.server.address() as AddressInfo;
  return async () => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    await once(socket, 'connect');
    return { socket, answers: keptAliveAnswers(socket) };
  };
}

/** `GET /v1/pets?limit=1` with `target`'s key, as raw bytes. */
const listRequest = (target: FaultyApp): string =>
  `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer(target.key).authorization}\r\n\r\n`;

/**
 * Pet creations that wait inside the repository until released, then are made for real; key lookups are
 * made for real and counted, so a test can show that a refusal cost none.
 */
function holdCreations(faulty: FaultyApp): {
  arrived(count: number): Promise<void>;
  release(): void;
  lookups(): number;
} {
  const real = faulty.database.repository(petRepository);
  const accounts = faulty.database.repository(accountRepository);
  let lookups = 0;
  let waiting = 0;
  const watchers: { count: number; resolve: () => void }[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  faulty.setFaults([
    [
      petRepository,
      'create',
      async (...args: Parameters<PetRepository['create']>) => {
        waiting++;
        for (const w of watchers.filter((w) => waiting >= w.count)) w.resolve();
        await gate;
        return real.create(...args);
      },
    ],
    [
      accountRepository,
      'findKeyByHash',
      (hash: string) => {
        lookups++;
        return accounts.findKeyByHash(hash);
      },
    ],
  ]);
  return {
    lookups: () => lookups,
    arrived: (count) =>
      waiting >= count ? Promise.resolve() : new Promise((resolve) => watchers.push({ count, resolve })),
    release,
  };
}

for (const backend of await backends()) {
  describe(`overload protection [${backend.name}]`, () => {
    let faulty: FaultyApp;
    before(async () => {
      faulty = await faultyApp(backend, [], {
        overloadMaxInFlight: LIMIT,
        unauthenticatedPerMinute: 100_000,
      });
    });
    after(() => faulty.close());

    const auth = (): { authorization: string } => bearer(faulty.key);
    const create = (name: string): Promise<LightMyRequestResponse> => createPetOn(faulty, name);

    test('a flood beyond the in-flight budget is refused with 503 overloaded; nothing acknowledged is lost', async () => {
      const held = holdCreations(faulty);
      const admitted = Array.from({ length: LIMIT }, (_, i) => create(`held-${i}`));
      await held.arrived(LIMIT);

      // The budget is full: every further request is refused, before its key is even looked up.
      const lookupsBefore = held.lookups();
      const flood = await Promise.all(
        Array.from({ length: FLOOD }, (_, i) =>
          i % 10 === 0
            ? create(`flood-${i}`)
            : faulty.app.inject({ url: '/v1/pets?limit=20', headers: auth() }),
        ),
      );
      for (const [i, res] of flood.entries()) assertOverloaded(res, `flood request ${i}`);
      assert.equal(held.lookups(), lookupsBefore, 'no key was looked up for a refused request');

      // Liveness and operations are never refused; readiness says the instance is shedding.
      const health = await faulty.app.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200, health.body);
      assert.deepEqual(health.json(), { status: 'ok' });
      const ready = await faulty.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503, ready.body);
      assert.equal(ready.json().status, 'overloaded');
      const metrics = await faulty.app.inject({ url: '/metrics' });
      assert.match(metrics.body, new RegExp(`^pet_adoption_http_requests_shed_total ${FLOOD}$`, 'm'));
      assert.match(metrics.body, new RegExp(`^pet_adoption_http_requests_in_flight ${LIMIT}$`, 'm'));

      // The load ends: every admitted creation is acknowledged, and every acknowledged pet is there.
      held.release();
      const answers = await Promise.all(admitted);
      const ids: number[] = [];
      for (const [i, res] of answers.entries()) {
        assert.equal(res.statusCode, 201, `held creation ${i}: ${res.body}`);
        ids.push(res.json().id);
      }
      faulty.setFaults([]);
      for (const id of ids) {
        const res = await faulty.app.inject({ url: `/v1/pets/${id}`, headers: auth() });
        assert.equal(res.statusCode, 200, `pet ${id} acknowledged with 201: ${res.body}`);
      }
      const names = new Set(
        (await faulty.database.repository(petRepository).list({ limit: 1000 })).map((p) => p.name),
      );
      for (let i = 0; i < LIMIT; i++) assert.ok(names.has(`held-${i}`), `held-${i} stored`);
      for (let i = 0; i < FLOOD; i += 10)
        assert.ok(!names.has(`flood-${i}`), `refused flood-${i} not stored`);
    });

    test('once the load has ended, requests are served again and /readyz is ready', async () => {
      // More than the budget, one after another: none is refused, since none waits for another.
      for (let i = 0; i < LIMIT * 3; i++) {
        const res = await create(`after-${i}`);
        assert.equal(res.statusCode, 201, `after-${i}: ${res.body}`);
      }
      const list = await faulty.app.inject({ url: '/v1/pets?limit=20', headers: auth() });
      assert.equal(list.statusCode, 200, list.body);
      faulty.clock.advance(SHEDDING_WINDOW_MS);
      const ready = await faulty.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 200, ready.body);
      assert.equal(ready.json().status, 'ready');
      const metrics = await faulty.app.inject({ url: '/metrics' });
      assert.match(metrics.body, /^pet_adoption_http_requests_in_flight 0$/m);
    });

    test('over real sockets: a refusal in the Error shape on a kept connection, which is not read for a while; /healthz answers 200', async () => {
      const held = holdCreations(faulty);
      await faulty.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = faulty.app.server.address() as AddressInfo;
      const serverSockets: Socket[] = [];
      faulty.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
      const admitted = Array.from({ length: LIMIT }, (_, i) => create(`socket-held-${i}`));
      await held.arrived(LIMIT);

      const client = connect(port, '127.0.0.1');
      const answers = keptAliveAnswers(client);
      const ask = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth().authorization}\r\n\r\n`;
      client.write(ask);
      const refused = await answers.next();
      assert.equal(refused.status, 503);
      assert.equal(refused.headers['retry-after'], '1');
      assert.notEqual(refused.headers.connection, 'close');
      assert.equal(JSON.parse(refused.body).code, 'overloaded');
      // The refused connection is not read until the pause ends, then read again: its next request is served.
      const serverSide = serverSockets.at(-1)!;
      assert.equal(serverSide.isPaused(), true, 'the refused connection is paused');
      const resumed = once(serverSide, 'resume');
      client.write(ask);
      const health = await get(port, '/healthz', {});
      assert.equal(health.status, 200, health.body);

      held.release();
      for (const res of await Promise.all(admitted)) assert.equal(res.statusCode, 201, res.body);
      faulty.setFaults([]);
      await resumed;
      assert.equal((await answers.next()).status, 200, 'the kept connection is served once read again');
      client.destroy();
    });

    test('over real sockets: under a full budget a kept connection waits its turn unread, behind those already waiting, and is then served', async () => {
      const queueing = await oneInFlightApp(backend);
      const sockets: Socket[] = [];
      try {
        const serverSockets: Socket[] = [];
        queueing.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
        const open = await keptConnections(queueing, sockets);
        const queued = async (): Promise<number> => {
          const metrics = await queueing.app.inject({ url: '/metrics' });
          return Number(/^pet_adoption_http_connections_queued (\d+)$/m.exec(metrics.body)?.[1]);
        };
        const authorization = bearer(queueing.key).authorization;
        const list = listRequest(queueing);
        const body = JSON.stringify({ name: 'queued-held', categoryId: 1, status: 'available' });
        const createRaw =
          `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

        // The one place in the budget: a creation held on the first connection.
        const held = holdCreations(queueing);
        const first = await open();
        first.socket.write(createRaw);
        await held.arrived(1);

        // A second connection is refused, and waits in the queue unread; its next request waits in the kernel.
        const second = await open();
        second.socket.write(list);
        const refusal = await second.answers.next();
        assert.equal(refusal.status, 503);
        assert.equal(JSON.parse(refusal.body).code, 'overloaded');
        assert.equal(refusal.headers['retry-after'], '1');
        assert.equal(await queued(), 1);
        assert.equal(serverSockets.at(-1)!.isPaused(), true, 'the queued connection is not read');
        second.socket.write(list);

        // The held creation is answered; the first connection asks again at once, but the second waited longer:
        // its request is read first, and served, not refused.
        const order: string[] = [];
        held.release();
        const created = await first.answers.next();
        assert.equal(created.status, 201, created.body);
        queueing.setFaults([]);
        first.socket.write(list);
        const [secondAnswer, firstAnswer] = await Promise.all([
          second.answers.next().then((answer) => (order.push('second'), answer)),
          first.answers.next().then((answer) => (order.push('first'), answer)),
        ]);
        assert.equal(secondAnswer.status, 200, secondAnswer.body);
        assert.equal(firstAnswer.status, 200, firstAnswer.body);
        assert.deepEqual(order, ['second', 'first'], 'the connection that waited longer is served first');
      } finally {
        for (const socket of sockets) socket.destroy();
        await queueing.close();
      }
    });

    test('over real sockets: a connection queued MAX_QUEUED_MS while the budget stays full is read and refused', async () => {
      const queueing = await oneInFlightApp(backend);
      const sockets: Socket[] = [];
      const held = holdCreations(queueing);
      const admittedCreation = createPetOn(queueing, 'expiry-held');
      try {
        await held.arrived(1);
        const { socket, answers } = await (await keptConnections(queueing, sockets))();
        const list = listRequest(queueing);
        socket.write(list);
        assert.equal((await answers.next()).status, 503);
        socket.write(list);
        // The budget stays full: once the queue's oldest has waited MAX_QUEUED_MS, its request is read and refused.
        queueing.clock.advance(MAX_QUEUED_MS);
        const again = await answers.next();
        assert.equal(again.status, 503, again.body);
        assert.equal(JSON.parse(again.body).code, 'overloaded');
      } finally {
        held.release();
        assert.equal((await admittedCreation).statusCode, 201);
        queueing.setFaults([]);
        for (const socket of sockets) socket.destroy();
        await queueing.close();
      }
    });

    test('the in-flight budget follows the wait: it shrinks while admitted requests wait beyond OVERLOAD_QUEUE_MS, and grows back while it refuses', async () => {
      const adaptive = await faultyApp(backend, [], {
        overloadMaxInFlight: 1000,
        overloadQueueMs: 100,
        unauthenticatedPerMinute: 100_000,
      });
      try {
        const budget = async (): Promise<number> => {
          const metrics = await adaptive.app.inject({ url: '/metrics' });
          return Number(/^pet_adoption_http_requests_in_flight_budget (\d+)$/m.exec(metrics.body)?.[1]);
        };
        const createOn = (name: string): Promise<LightMyRequestResponse> => createPetOn(adaptive, name);
        /** `count` creations admitted, held while the clock moves `waitMs`, then answered. */
        const waitOut = async (count: number, waitMs: number, tag: string): Promise<void> => {
          const held = holdCreations(adaptive);
          const pending = Array.from({ length: count }, (_, i) => createOn(`${tag}-${i}`));
          await held.arrived(count);
          adaptive.clock.advance(waitMs);
          held.release();
          for (const res of await Promise.all(pending)) assert.equal(res.statusCode, 201, res.body);
          adaptive.setFaults([]);
        };
        assert.equal(
          await budget(),
          INITIAL_IN_FLIGHT_BUDGET,
          'the initial budget until a window is measured',
        );

        // Admitted requests waited 150 ms for a 100 ms target: the budget shrinks in proportion.
        await waitOut(3, 150, 'slow');
        adaptive.clock.advance(BUDGET_WINDOW_MS);
        await createOn('next-window');
        assert.equal(await budget(), Math.round((INITIAL_IN_FLIGHT_BUDGET * 100) / 150));
        // 400 ms: halved at most per window, and never below the floor.
        await waitOut(3, 400, 'slower');
        await createOn('next-window-2');
        assert.equal(await budget(), MIN_IN_FLIGHT_BUDGET, 'never below the floor');

        // The budget is reached and refuses while the wait is short: it grows, at most doubling per window.
        const held = holdCreations(adaptive);
        const pending = Array.from({ length: MIN_IN_FLIGHT_BUDGET }, (_, i) => createOn(`fill-${i}`));
        await held.arrived(MIN_IN_FLIGHT_BUDGET);
        assertOverloaded(await createOn('refused'), 'beyond the budget');
        held.release();
        for (const res of await Promise.all(pending)) assert.equal(res.statusCode, 201, res.body);
        adaptive.setFaults([]);
        adaptive.clock.advance(BUDGET_WINDOW_MS);
        await createOn('next-window-3');
        assert.equal(await budget(), 2 * MIN_IN_FLIGHT_BUDGET);
      } finally {
        await adaptive.close();
      }
    });

    test('while refusals outnumber the answers, refused connections are paused longer and Retry-After says so; it comes back once they do not', async () => {
      const shedding = await oneInFlightApp(backend);
      try {
        const pause = async (): Promise<number> => {
          const metrics = await shedding.app.inject({ url: '/metrics' });
          return (
            Number(/^pet_adoption_http_refused_connection_pause_seconds ([\d.]+)$/m.exec(metrics.body)?.[1]) *
            1000
          );
        };
        const createOn = (name: string): Promise<LightMyRequestResponse> => createPetOn(shedding, name);
        /** Three requests refused beyond the one in flight; their Retry-After. */
        const refuseThree = async (tag: string): Promise<string[]> => {
          const answers = await Promise.all([1, 2, 3].map((i) => createOn(`${tag}-${i}`)));
          for (const res of answers) assertOverloaded(res, tag);
          return answers.map((res) => String(res.headers['retry-after']));
        };
        assert.equal(await pause(), REFUSED_CONNECTION_PAUSE_MS);
        const held = holdCreations(shedding);
        const admitted = createOn('held');
        await held.arrived(1);
        // Windows in which only refusals were answered: the pause doubles each time, up to its maximum.
        assert.deepEqual(await refuseThree('first'), ['1', '1', '1']);
        for (const expected of [800, 1600, MAX_REFUSED_CONNECTION_PAUSE_MS]) {
          shedding.clock.advance(BUDGET_WINDOW_MS);
          await refuseThree(`window-${expected}`);
          assert.equal(await pause(), expected);
        }
        assert.deepEqual(await refuseThree('told'), ['2', '2', '2'], 'Retry-After rounds the pause up');
        held.release();
        assert.equal((await admitted).statusCode, 201);
        shedding.setFaults([]);
        // The window of those refusals closes as before; then windows in which answers outnumber refusals:
        // it halves back to the minimum.
        for (const expected of [MAX_REFUSED_CONNECTION_PAUSE_MS, 800, REFUSED_CONNECTION_PAUSE_MS]) {
          shedding.clock.advance(BUDGET_WINDOW_MS);
          assert.equal((await createOn(`calm-${expected}`)).statusCode, 201);
          assert.equal(await pause(), expected);
        }
      } finally {
        await shedding.close();
      }
    });

    test('connections beyond MAX_CONNECTIONS are closed on accept', async () => {
      const limited = await faultyApp(backend, [], { maxConnections: 2 });
      try {
        await limited.app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = limited.app.server.address() as AddressInfo;
        const dropped = new Promise<void>((resolve) => limited.app.server.once('drop', () => resolve()));
        const open = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
        await Promise.all(open.map((s) => new Promise((resolve) => s.once('connect', resolve))));
        // Both are counted once the server has accepted them: a request on each is answered.
        for (const s of open) {
          s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
          await new Promise((resolve) => s.once('data', resolve));
        }
        const third = connect(port, '127.0.0.1');
        third.on('error', () => {});
        const closed = new Promise<void>((resolve) => third.once('close', () => resolve()));
        await dropped;
        await closed;
        for (const s of open) s.destroy();
      } finally {
        await limited.close();
      }
    });
  });
}

describe('the liveness listener (HEALTH_PORT)', () => {
  test('answers GET and HEAD /healthz 200, and nothing else of the API', async () => {
    const health = await startHealthListener('127.0.0.1', 0);
    try {
      const { port } = health.server.address() as AddressInfo;
      const ok = await get(port, '/healthz', {});
      assert.equal(ok.status, 200);
      assert.deepEqual(JSON.parse(ok.body), { status: 'ok' });
      assert.equal(ok.headers['x-content-type-options'], 'nosniff');
      const head = await get(port, '/healthz', {}, 'HEAD');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      for (const path of ['/v1/pets', '/readyz', '/metrics', '/healthz/x']) {
        const res = await get(port, path, {});
        assert.equal(res.status, 404, path);
        assert.equal(JSON.parse(res.body).code, 'not_found', path);
      }
    } finally {
      await health.close();
    }
  });
});

function get(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
