import { EventEmitter } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { TurnBatch, type Settled } from '../db/turn-batch.js';
import { withDeadline } from './deadline.js';
import { defineHandBackCommands, sendBans, sendCounts } from './handback.js';
import { MemoryCounterStore } from './memory.js';
import type { ConsumeRequest, ConsumeResult, CounterStore } from './store.js';
import { CONSUME_LUA } from './redis-script.js';

type ScriptedRedis = Redis & {
  rateLimitConsume(numberOfKeys: number, ...args: string[]): Promise<unknown>;
};

export interface RedisCounterStoreOptions {
  /** Prepended to every key; must not contain `{` or `}`, which would break the per-subject hash tag. */
  prefix: string;
  /**
   * The database's installation id (Storage.installationId): keys are `<prefix><installationId>:…`, so two
   * deployments sharing a Redis never share counts, whatever their prefix; instances on one database do.
   */
  installationId: string;
  /** How long a request waits for Redis before it is answered from in-process counters. */
  timeoutMs: number;
  logger?: FastifyBaseLogger;
  /** How often, while degraded on a connection that looks open (a hung or read-only Redis), to try a write. */
  probeEveryMs?: number;
}

/**
 * Counters in Redis, shared by every instance of the service. Redis trouble never reaches the client:
 * when Redis errors, is unreachable or does not answer within `timeoutMs`, the request is answered from
 * in-process counters instead, the outage is logged once, and `healthy()` is false so /readyz reports
 * `memory-fallback`.
 *
 * The fallback starts from the counts Redis last reported for each subject and window (kept from every
 * answer in the same bounded, swept structure the memory store uses), so one instance never admits more
 * than the quota in a window: it can only spend what Redis last said was left. When Redis is back, the
 * counts (and bans) taken during the outage are handed back to Redis before it is used again; until that
 * is done requests stay on the fallback. Several instances cut off at once each spend what they last saw
 * left (worst case about N × remaining); the README's rate-limit section says so.
 *
 * While degraded no request waits for Redis. It counts as back when ioredis reconnects ('ready') or, for a
 * connection that stayed open while Redis stopped answering, when a periodic write probe succeeds.
 *
 * Events: 'down' when an outage begins, 'up' when counting is back in Redis (after the hand-back),
 * 'reconnecting' on every reconnection attempt ioredis makes.
 */
export class RedisCounterStore extends EventEmitter implements CounterStore {
  readonly kind = 'redis' as const;
  readonly prefix: string;
  readonly installationId: string;
  /** `prefix` + installation id: what every key starts with. */
  private readonly namespace: string;
  private readonly client: ScriptedRedis;
  private readonly fallback = new MemoryCounterStore();
  private readonly timeoutMs: number;
  private readonly probeEveryMs: number;
  private readonly logger: FastifyBaseLogger | undefined;
  /** `connecting` until the first connection: requests then wait up to `timeoutMs` rather than fall back. */
  private state: 'connecting' | 'up' | 'down' = 'connecting';
  private closing = false;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;
  /** True while counts taken during an outage are being handed back to Redis. */
  private handingBack = false;
  private readonly readyWaiters = new Set<(up: boolean) => void>();
  private sent = 0;
  /** A turn's consumes, sent as one script per subject at the end of the turn. */
  private readonly consumes = new TurnBatch<ConsumeRequest, ConsumeResult>((requests) =>
    this.consumeInRedis(requests),
  );

  constructor(url: string, options: RedisCounterStoreOptions) {
    super();
    this.prefix = options.prefix;
    this.installationId = options.installationId;
    this.namespace = `${options.prefix}${options.installationId}:`;
    this.timeoutMs = options.timeoutMs;
    this.probeEveryMs = options.probeEveryMs ?? 500;
    this.logger = options.logger;
    this.client = new Redis(url, {
      // Fail at once instead of queueing while disconnected: a queued command would only time out later.
      enableOfflineQueue: false,
      // The consumes of one event-loop turn (a turn's key lookups resolve together) leave in one socket write
      // instead of one write system call each: measured, most of the Redis client's CPU per request.
      enableAutoPipelining: true,
      // No ioredis commandTimeout: its timer fires before the socket is read when our own event loop is busy,
      // mistaking a burst of requests for a slow Redis. `withDeadline` below bounds each command instead.
      maxRetriesPerRequest: 0,
      connectTimeout: Math.max(1000, options.timeoutMs * 20),
      // Never give up: the service keeps running on memory counters and returns to Redis when it can.
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    }) as ScriptedRedis;
    // Every command (EVALSHA, the EVAL fallback, hand-back and probe writes) goes through sendCommand.
    const send = this.client.sendCommand.bind(this.client);
    this.client.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
      this.sent++;
      return send(...args);
    };
    // defineCommand sends EVALSHA and falls back to EVAL when Redis does not know the script (after a restart).
    this.client.defineCommand('rateLimitConsume', { lua: CONSUME_LUA });
    defineHandBackCommands(this.client);
    this.client.on('ready', () => this.markUp());
    this.client.on('reconnecting', () => this.emit('reconnecting'));
    // Without a listener ioredis would print every reconnection failure; the outage is logged once instead.
    this.client.on('error', (error: Error) => this.markDown(error));
    this.client.on('close', () => this.markDown(new Error('connection to Redis closed')));
  }

  get commandsSent(): number {
    return this.sent;
  }

  async consume(request: ConsumeRequest): Promise<ConsumeResult> {
    if (this.state === 'connecting') await this.ready(this.timeoutMs);
    if (this.state !== 'up') return this.fallback.consumeNow(request);
    try {
      const result = await this.consumes.add(request);
      this.fallback.observe(request, result);
      return result;
    } catch (error) {
      this.markDown(error instanceof Error ? error : new Error(String(error)));
      return this.fallback.consumeNow(request);
    }
  }

  /**
   * One script per subject for the consumes of one turn (see CONSUME_LUA), sent together (autopipelining);
   * a subject whose script fails gets the error, the others their results.
   */
  private async consumeInRedis(requests: ConsumeRequest[]): Promise<Settled<ConsumeResult>[]> {
    const bySubject = new Map<string, number[]>();
    requests.forEach((request, i) => {
      const group = bySubject.get(request.subject);
      if (group) group.push(i);
      else bySubject.set(request.subject, [i]);
    });
    const outcomes: Settled<ConsumeResult>[] = new Array(requests.length);
    await Promise.all(
      [...bySubject.values()].map(async (group) => {
        try {
          const results = await this.consumeForSubject(group.map((i) => requests[i]!));
          group.forEach((i, j) => (outcomes[i] = { value: results[j]! }));
        } catch (error) {
          for (const i of group) outcomes[i] = { error };
        }
      }),
    );
    return outcomes;
  }

  private async consumeForSubject(requests: ConsumeRequest[]): Promise<ConsumeResult[]> {
    const keys: string[] = [];
    const args: string[] = [];
    let groups = 0;
    let previous = '';
    let repeatAt = -1;
    for (const request of requests) {
      const { windows } = request;
      const base = this.keyBase(request.subject);
      const requestKeys = [...windows.map((w) => base + w.id), base + request.rejectedId, `${base}ban`];
      const requestArgs = [
        String(windows.length),
        ...windows.map((w) => String(w.limit)),
        ...windows.map((w) => String(Math.max(1, Math.ceil(w.ttlMs)))),
        // Lua has no Infinity literal to receive; -1 means "never ban".
        Number.isFinite(request.banThreshold) ? String(request.banThreshold) : '-1',
        String(Math.max(1, Math.ceil(request.banMs))),
        String(request.now),
        request.banLiftedAt === null ? '-1' : String(request.banLiftedAt),
        String(request.now + request.banMs),
      ];
      const signature = `${requestKeys.join('\n')}\n${requestArgs.join('\n')}`;
      if (signature === previous) {
        args[repeatAt] = String(Number(args[repeatAt]) + 1);
        continue;
      }
      previous = signature;
      groups++;
      keys.push(...requestKeys);
      repeatAt = args.length;
      args.push('1', ...requestArgs);
    }
    const reply = await withDeadline(
      this.client.rateLimitConsume(keys.length, ...keys, String(groups), ...args),
      this.timeoutMs,
    );
    return parseReply(
      reply,
      requests.map((r) => r.windows.length),
    );
  }

  /** The `{subject}` hash tag puts all of a subject's keys in one cluster slot, as a multi-key script needs. */
  private keyBase(subject: string): string {
    return `${this.namespace}{${subject}}|`;
  }

  healthy(): boolean {
    return this.state === 'up';
  }

  /** Resolves true once connected to Redis, false if that takes longer than `withinMs` or fails. */
  ready(withinMs: number): Promise<boolean> {
    if (this.state === 'up') return Promise.resolve(true);
    if (this.closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (up: boolean) => {
        clearTimeout(timer);
        this.readyWaiters.delete(done);
        resolve(up);
      };
      const timer = setTimeout(() => done(false), withinMs);
      this.readyWaiters.add(done);
    });
  }

  /** Redis answers again: hand back what the fallback counted, then count in Redis. */
  private markUp(): void {
    if (this.closing || this.state === 'up' || this.handingBack) return;
    this.handingBack = true;
    this.handBack()
      .catch(() => {
        // Redis failed again mid-way; what was not acknowledged stays pending and the probe retries.
        if (this.state === 'connecting')
          this.markDown(new Error('Redis failed while counts were handed back'));
        else this.startProbe();
      })
      .finally(() => {
        this.handingBack = false;
      });
  }

  /**
   * Sends the fallback's pending counts and bans to Redis until none are left, then switches to Redis in
   * the same synchronous step as the final check, so no request can be counted in memory in between.
   */
  private async handBack(): Promise<void> {
    for (;;) {
      if (this.closing) return;
      const counts = this.fallback.pendingCounts();
      const bans = this.fallback.pendingBans();
      if (counts.length === 0 && bans.length === 0) {
        this.becomeUp();
        return;
      }
      // A hand-back round trip carries many scripts: more than one request's budget.
      const deadlineMs = Math.max(1000, this.timeoutMs * 20);
      const keyBase = (subject: string) => this.keyBase(subject);
      await sendCounts(this.client, this.fallback, counts, keyBase, deadlineMs);
      await sendBans(this.client, this.fallback, bans, keyBase, deadlineMs);
    }
  }

  private becomeUp(): void {
    if (this.state === 'down') {
      this.logger?.info(
        { event: 'rate_limit_store_recovered' },
        'Redis is reachable again; rate limits are counted in Redis',
      );
    }
    this.state = 'up';
    this.stopProbe();
    for (const waiter of [...this.readyWaiters]) waiter(true);
    this.emit('up');
  }

  private markDown(error: Error): void {
    if (this.closing || this.state === 'down') return;
    this.state = 'down';
    this.logger?.warn(
      { event: 'rate_limit_store_fallback', err: error },
      'Redis unavailable; rate limits fall back to in-process counters until it returns',
    );
    for (const waiter of [...this.readyWaiters]) waiter(false);
    this.startProbe();
    this.emit('down');
  }

  private startProbe(): void {
    if (this.probe || this.closing) return;
    this.probe = setInterval(() => void this.runProbe(), this.probeEveryMs);
    this.probe.unref();
  }

  private stopProbe(): void {
    clearInterval(this.probe);
    this.probe = undefined;
  }

  /**
   * A dropped connection comes back through ioredis' 'ready' event; this covers a connection that stays
   * open while Redis stops answering or refuses writes. A write, because a read-only replica still answers PING.
   */
  private async runProbe(): Promise<void> {
    if (this.probing || this.client.status !== 'ready') return;
    this.probing = true;
    try {
      await withDeadline(this.client.set(`${this.namespace}probe`, '1', 'PX', 10_000), this.timeoutMs);
      this.markUp();
    } catch {
      // Still down; the outage was logged when it began.
    } finally {
      this.probing = false;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    this.stopProbe();
    for (const waiter of [...this.readyWaiters]) waiter(false);
    await this.fallback.close();
    if (this.client.status === 'ready') {
      // Bounded: a hung Redis must not hold up shutdown.
      await withDeadline(this.client.quit(), Math.max(this.timeoutMs, 1000)).catch(() =>
        this.client.disconnect(),
      );
    } else {
      this.client.disconnect();
    }
  }
}

function parseReply(reply: unknown, windowCounts: number[]): ConsumeResult[] {
  const expected = windowCounts.reduce((sum, n) => sum + n + 3, 0);
  if (!Array.isArray(reply) || reply.length !== expected) {
    throw new Error(`unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`);
  }
  const results: ConsumeResult[] = [];
  let at = 0;
  for (const n of windowCounts) {
    const [allowed, bannedUntil, event] = reply.slice(at, at + 3) as unknown[];
    const result: ConsumeResult = {
      allowed: allowed === 1,
      counts: (reply.slice(at + 3, at + 3 + n) as unknown[]).map(Number),
      bannedUntil: bannedUntil === '' || bannedUntil === null ? null : Number(bannedUntil),
    };
    if (event === 'banned' || event === 'unbanned') result.event = event;
    results.push(result);
    at += n + 3;
  }
  return results;
}
