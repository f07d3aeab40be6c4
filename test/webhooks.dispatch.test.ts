/**
 * The dispatcher keeps its promises while other deliveries hold slots, on every backend: a receiver that
 * hangs and one that answers slowly (with a backlog thousands deep) are kept busy while a 500 and a 307 are
 * retried once due, a 410 disables its endpoint and a manual retry is sent again, each within a few
 * seconds; and one account's hanging receivers and backlog do not keep another account's first delivery
 * waiting. Time is the injected clock, moved by hand to make the retries due; every wait is on an arrival
 * or a recorded attempt, bounded by what the promise allows.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher.js';
import { webhookRepository } from '../src/modules/webhooks/repository.js';
import { backends, bearer, createTestContext, TestClock, type TestContext } from './helpers.js';
import { insertEvent } from './support/webhooks.js';

const ALLOW = ['127.0.0.1'];
/** "Within a couple of seconds": the poll interval (1 s) and a margin for a loaded machine. */
const PROMPTLY_MS = 5_000;
/** The slow receiver's backlog: at its pace, far more than PROMPTLY_MS of work. */
const BACKLOG = 2_000;

/** Fails unless `promise` settles within `ms`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A receiver that answers its n-th request (from 1) as `answer` says; records the webhook-id of each. */
class Scripted {
  readonly ids: string[] = [];
  private readonly server: http.Server;
  constructor(answer: (n: number, res: http.ServerResponse) => void) {
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.ids.push(String(req.headers['webhook-id']));
        this.server.emit('received');
        answer(this.ids.length, res);
      });
    });
  }
  async start(path = '/hook'): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }
  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }
  /** Resolves once `count` requests have arrived. */
  async waitFor(count: number): Promise<void> {
    while (this.ids.length < count) await once(this.server, 'received');
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const answer = (status: number, res: http.ServerResponse, headers: Record<string, string> = {}) =>
  res.writeHead(status, headers).end('ok');

for (const backend of await backends()) {
  describe(`webhook dispatch under load [${backend.name}]`, () => {
    let ctx: TestContext;
    let dispatcher: WebhookDispatcher | undefined;
    const receivers: Scripted[] = [];
    /** Emits 'recorded' whenever the dispatcher has put a batch of attempts on record. */
    const records = new EventEmitter();

    const receiver = (fn: (n: number, res: http.ServerResponse) => void) => {
      const r = new Scripted(fn);
      receivers.push(r);
      return r;
    };
    const api = (key: string, method: string, path: string, payload?: object) =>
      ctx.app.inject({ method: method as 'GET', url: `/v1${path}`, headers: bearer(key), payload });
    const createEndpoint = async (key: string, url: string, events: string[]) => {
      const res = await api(key, 'POST', '/webhook-endpoints', { url, events });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number }>().id;
    };
    const firstDelivery = async (key: string, endpoint: number) =>
      (await api(key, 'GET', `/webhook-endpoints/${endpoint}/deliveries`)).json<
        { id: number; status: string; attempts: number; lastStatusCode: number | null }[]
      >()[0];
    /** Resolves once `check` holds, looking again after every batch the dispatcher records. */
    const untilRecorded = async (check: () => Promise<boolean>) => {
      for (;;) {
        const next = once(records, 'recorded');
        if (await check()) return;
        await next;
      }
    };
    const start = (options: Partial<ConstructorParameters<typeof WebhookDispatcher>[0]> = {}) => {
      dispatcher = new WebhookDispatcher({
        database: ctx.database,
        clock: ctx.clock.fn,
        allowHosts: ALLOW,
        // The production default: the retries must not depend on a poll faster than it.
        pollMs: 1_000,
        random: () => 0.5,
        // The hanging receiver holds its slots for the whole test.
        timeoutMs: 60_000,
        onRecorded: () => records.emit('recorded'),
        ...options,
      });
      dispatcher.start();
    };
    /** Events of `type` fanned out to the endpoints that exist now, before the endpoints made later. */
    const backlog = async (count: number, type: 'pet.updated' | 'pet.created') => {
      for (let i = 0; i < count; i++) await insertEvent(ctx.database, { type, createdAt: ctx.clock.now });
      const repo = ctx.database.repository(webhookRepository);
      while ((await repo.fanOut(ctx.clock.now, 1_000)) > 0);
    };

    // A database per test: the endpoints and backlog of one must not share the slots of the next.
    beforeEach(async () => {
      ctx = await createTestContext(backend, {
        config: { webhookAllowHosts: ALLOW },
        clock: new TestClock(Date.now()),
      });
    });
    afterEach(async () => {
      await dispatcher?.stop();
      dispatcher = undefined;
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await ctx.close();
    });

    test(
      'with a hanging and a slow receiver busy, a 500 and a 307 are retried when due, a 410 disables, a manual retry is re-sent',
      { timeout: 120_000 },
      async () => {
        const { key } = await ctx.createKey();
        const hanging = receiver(() => {});
        // Answers after 20-195 ms, so its slots turn over all the time.
        const slow = receiver((n, res) => setTimeout(() => answer(200, res), 20 + (n % 8) * 25));
        await createEndpoint(key, await hanging.start(), ['*']);
        await createEndpoint(key, await slow.start(), ['*']);
        await backlog(BACKLOG, 'pet.updated');

        const failing = receiver((n, res) => answer(n === 1 ? 500 : 200, res));
        const gone = receiver((_n, res) => answer(410, res));
        const redirecting = receiver((n, res) =>
          n === 1 ? answer(307, res, { location: 'http://127.0.0.1:1/elsewhere' }) : answer(200, res),
        );
        const healthy = receiver((_n, res) => answer(200, res));
        const failingId = await createEndpoint(key, await failing.start(), ['*']);
        const goneId = await createEndpoint(key, await gone.start(), ['*']);
        const redirectingId = await createEndpoint(key, await redirecting.start(), ['*']);
        const healthyId = await createEndpoint(key, await healthy.start(), ['*']);
        await insertEvent(ctx.database, { type: 'pet.created', createdAt: ctx.clock.now });

        start();
        // Everything is due now, and the backlog is older: the first attempts come all the same.
        await within(
          PROMPTLY_MS,
          'first attempts',
          Promise.all([
            failing.waitFor(1),
            gone.waitFor(1),
            redirecting.waitFor(1),
            healthy.waitFor(1),
            hanging.waitFor(1),
            slow.waitFor(1),
          ]),
        );
        await within(
          PROMPTLY_MS,
          'the first attempts on record',
          untilRecorded(async () => {
            const [f, r, h, g] = await Promise.all([
              firstDelivery(key, failingId),
              firstDelivery(key, redirectingId),
              firstDelivery(key, healthyId),
              api(key, 'GET', `/webhook-endpoints/${goneId}`),
            ]);
            return (
              f?.attempts === 1 &&
              r?.attempts === 1 &&
              h?.status === 'succeeded' &&
              g.json<{ enabled: boolean }>().enabled === false
            );
          }),
        );
        const disabled = (await api(key, 'GET', `/webhook-endpoints/${goneId}`)).json();
        assert.match(disabled.disabledReason, /410/);
        assert.equal((await firstDelivery(key, failingId))!.lastStatusCode, 500);
        assert.equal((await firstDelivery(key, redirectingId))!.lastStatusCode, 307);
        assert.ok(slow.ids.length < BACKLOG, 'the slow receiver still has a backlog');

        // The schedule's first retry (jitter pinned to the middle): 5 s later. A manual retry at the same time.
        ctx.clock.advance(5_000);
        const retried = await api(
          key,
          'POST',
          `/webhook-endpoints/${healthyId}/deliveries/${(await firstDelivery(key, healthyId))!.id}/retry`,
        );
        assert.equal(retried.statusCode, 202, retried.body);
        await within(
          PROMPTLY_MS,
          'the retries once due',
          Promise.all([failing.waitFor(2), redirecting.waitFor(2), healthy.waitFor(2)]),
        );
        assert.equal(failing.ids[1], failing.ids[0], 'the 500 delivery was sent again');
        assert.equal(redirecting.ids[1], redirecting.ids[0], 'the 307 delivery was sent again');
        assert.equal(healthy.ids[1], healthy.ids[0], 'the manual retry was sent again');
        assert.equal(gone.ids.length, 1, 'nothing more to the disabled endpoint');
        assert.ok(slow.ids.length < BACKLOG, 'the slow receiver was busy throughout');
        assert.ok(hanging.ids.length <= 16, 'the hanging receiver never got more than its share');
        assert.ok(
          hanging.ids.every((id, i) => hanging.ids.indexOf(id) === i),
          'nothing hung was sent twice',
        );
      },
    );

    test(
      "one account's hanging receivers and backlog do not delay another account's first delivery",
      { timeout: 120_000 },
      async () => {
        const a = await ctx.createKey();
        const b = await ctx.createKey();
        const hanging = receiver(() => {});
        await hanging.start();
        // Four endpoints of one account, 16 slots each: without a share per account, all 64 of the instance.
        for (let i = 0; i < 4; i++) await createEndpoint(a.key, hanging.url(`/a${i}`), ['pet.updated']);
        await backlog(BACKLOG / 4, 'pet.updated');
        const healthy = receiver((_n, res) => answer(200, res));
        const healthyId = await createEndpoint(b.key, await healthy.start(), ['pet.created']);
        await insertEvent(ctx.database, { type: 'pet.created', createdAt: ctx.clock.now });

        start();
        await within(PROMPTLY_MS, "account B's first delivery", healthy.waitFor(1));
        await within(
          PROMPTLY_MS,
          "account B's delivery on record",
          untilRecorded(async () => (await firstDelivery(b.key, healthyId))?.status === 'succeeded'),
        );
        // Account A holds at most its share, half of the 64 slots.
        await within(PROMPTLY_MS, "account A's share", hanging.waitFor(32));
        const repo = ctx.database.repository(webhookRepository);
        const now = ctx.clock.now;
        const left = await repo.claim({ now, leaseUntil: now + 1, limit: 10_000, busyEndpoints: [] });
        assert.equal(left.length, BACKLOG - 32, 'only 32 of account A are leased');
        assert.equal(hanging.ids.length, 32);
      },
    );

    test('a stream of writes that commit no event does not put off the poll that finds a due retry', async () => {
      const { key } = await ctx.createKey();
      const failing = receiver((n, res) => answer(n === 1 ? 500 : 200, res));
      const failingId = await createEndpoint(key, await failing.start(), ['*']);
      await insertEvent(ctx.database, { type: 'pet.created', createdAt: ctx.clock.now });
      start();
      await within(
        PROMPTLY_MS,
        'the 500 on record',
        untilRecorded(async () => (await firstDelivery(key, failingId))?.attempts === 1),
      );
      // What the server does after every write (a 400, a key change, ...): a wake, which fans out nothing.
      const writes = setInterval(() => dispatcher!.wake(), 100);
      try {
        ctx.clock.advance(5_000);
        await within(PROMPTLY_MS, 'the retry once due', failing.waitFor(2));
      } finally {
        clearInterval(writes);
      }
      assert.equal(failing.ids[1], failing.ids[0]);
    });
  });
}
