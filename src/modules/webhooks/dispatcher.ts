/**
 * The webhook dispatcher, run by every instance: it fans undispatched events out into
 * deliveries, then claims due deliveries with a lease and sends them, signed by the `standardwebhooks`
 * package.
 *
 * Why our own queue over the outbox tables rather than a queue library: the deliveries must be created in
 * the same database as the events, in one transaction with marking them dispatched, on SQLite as well as
 * PostgreSQL. pg-boss and graphile-worker are PostgreSQL-only, BullMQ and bee-queue need Redis (a second
 * store would break the transactional outbox: an event could be marked dispatched with its deliveries lost),
 * and the SQLite queues found are single-process toys without leases. Leases plus FOR UPDATE SKIP LOCKED
 * are a few statements per backend (see repository.*.ts).
 *
 * Bounds: at most `concurrency` deliveries in flight per instance, `perEndpoint` per endpoint and
 * `perAccount` per account, so a slow or hanging receiver holds at most its own slots for at most
 * `timeoutMs`, never an API request (sending runs on the event loop, off the request path) nor another
 * endpoint, and one account's receivers never hold every slot. Free slots go to the least loaded account
 * and endpoint first (repository.ts fairOrder), so another endpoint's backlog never stands in front of a
 * due retry or another account's first delivery.
 */
import { Webhook } from 'standardwebhooks';
import { Counter, Registry } from 'prom-client';
import { systemClock, type Clock } from '../../clock.js';
import { sendOnce } from './delivery.js';
import {
  webhookRepository,
  type AttemptOutcome,
  type ClaimedDelivery,
  type Completion,
  type WebhookRepository,
} from './repository.js';
import { NOT_AUTHORIZED } from './decisions.js';
import { QueueGauges } from './queue-gauges.js';
import { DISABLE_AFTER_MS, nextAttemptAt } from './schedule.js';
import { traceAttempt } from './attempt-span.js';
import type { DispatcherOptions } from './dispatcher-options.js';

export const LEASE_MS = 30_000;
export const DELIVERY_TIMEOUT_MS = 15_000;
const FAN_OUT_BATCH = 200;
const MAX_SIGNERS = 1000;

/** Deliveries in flight while the API is busy (DispatcherOptions.busy). */
export const BUSY_CONCURRENCY = 4;
/** Events fanned out per pass while the API is busy. */
const BUSY_FAN_OUT_BATCH = 32;

export class WebhookDispatcher {
  private readonly repo: WebhookRepository;
  private readonly clock: Clock;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly perAccount: number;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly inFlight = new Map<number, number>();
  private readonly accountInFlight = new Map<number, number>();
  private readonly running = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private readonly outcomes: Counter<'outcome'>;
  private readonly queueGauges: QueueGauges;
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private again = false;
  private wakeQueued = false;
  /**
   * Whether the next pass must look for due deliveries even if it fans out nothing. A commit's wake finds
   * new deliveries only through its fan-out; anything else that can make one due (time, a freed slot,
   * another instance's fan-out) comes through the poll timer or a completion, which set this. On a busy
   * instance with no endpoint, this spares every write turn the claim's transaction.
   */
  private claimDue = true;
  private readonly signers = new Map<string, Webhook>();
  /** Attempts finished in this turn, recorded together in one transaction (see record()). */
  private finished: {
    completion: Completion;
    resolve: (held: boolean) => void;
    reject: (e: unknown) => void;
  }[] = [];
  private started = false;
  private stopped = false;

  constructor(private readonly options: DispatcherOptions) {
    this.repo = options.database.repository(webhookRepository);
    this.clock = options.clock ?? systemClock;
    this.concurrency = options.concurrency ?? 64;
    this.perEndpoint = options.perEndpoint ?? 16;
    this.perAccount = options.perAccount ?? Math.max(this.perEndpoint, Math.floor(this.concurrency / 2));
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    const registers = [options.registry ?? new Registry()];
    this.outcomes = new Counter({
      name: 'pet_adoption_webhook_delivery_attempts_total',
      help: 'Webhook delivery attempts by outcome (succeeded, http_error, network_error, refused, not_authorized).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.queueGauges = new QueueGauges(this.repo, this.clock, registers, (err) =>
      this.options.logger?.warn({ err }, 'webhook queue figures could not be read'),
    );
  }

  /** Starts polling; wake() makes it look at once. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.queueGauges.start();
    this.wake();
  }

  /**
   * Look for work soon (after a commit that may have written events). Every wake of one turn of the event
   * loop (a busy instance answers dozens of writes per turn) comes to one pass, run after the turn's I/O.
   */
  wake(): void {
    if (!this.started || this.stopped || this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      this.lookNow(true);
    });
  }

  /**
   * The poll: a pass that claims at least every `pollMs`, however many other passes run. Re-arming it after
   * every pass instead let a stream of completions or commit wakes (each pass under `pollMs` after the last)
   * put it off for as long as they came, and with it every retry that only time makes due.
   */
  private armPoll(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.lookNow();
    }, this.options.pollMs);
    this.timer.unref();
  }

  /** Look for work now: a pass, or another one right after the pass under way. */
  private lookNow(afterCommit = false): void {
    if (!this.started || this.stopped) return;
    if (!afterCommit) this.claimDue = true;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = this.pass()
      .catch((err: unknown) => this.options.logger?.warn({ err }, 'webhook dispatch pass failed'))
      .finally(() => {
        this.passing = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.lookNow(true); // the reason that set `again` already set claimDue
        } else {
          this.armPoll();
        }
      });
  }

  /**
   * Stops polling and aborts what is in flight; those deliveries are not recorded, so their leases expire
   * and they are sent again (by this instance after a restart, or another one).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort();
    await this.passing;
    await Promise.allSettled([...this.running]);
    await this.queueGauges.stop();
  }

  /** One pass and every delivery it starts, awaited: for tests and the CLI, without the polling loop. */
  async runOnce(): Promise<void> {
    this.claimDue = true;
    await this.pass();
    await Promise.allSettled([...this.running]);
    await this.queueGauges.refresh();
  }

  private async pass(): Promise<void> {
    const apiBusy = this.options.busy?.() ?? false;
    const cap = apiBusy ? Math.min(BUSY_CONCURRENCY, this.concurrency) : this.concurrency;
    // One slot per endpoint while busy, so a hanging receiver cannot take the few there are.
    const perEndpoint = apiBusy ? 1 : this.perEndpoint;
    const perAccount = apiBusy ? Math.max(1, Math.floor(cap / 2)) : this.perAccount;
    // While the API is busy, the fan-out is background work too: one small batch per pass, and none while
    // every slot is taken (a completion's pass comes soon).
    if (apiBusy && this.running.size >= cap) return;
    let fannedOut = 0;
    for (;;) {
      const batch = apiBusy ? BUSY_FAN_OUT_BATCH : FAN_OUT_BATCH;
      const n = await this.repo.fanOut(this.clock(), batch);
      fannedOut += n;
      if (apiBusy || n < batch) break;
      if (this.stopped) return;
    }
    if (fannedOut === 0 && !this.claimDue) return;
    this.claimDue = false;
    const free = cap - this.running.size;
    if (free <= 0 || this.stopped) return;
    const fullEndpoints = [...this.inFlight].filter(([, n]) => n >= perEndpoint).map(([id]) => id);
    const now = this.clock();
    const claimed = await this.repo.claim({
      now,
      leaseUntil: now + this.leaseMs,
      limit: free,
      busyEndpoints: fullEndpoints,
      perEndpoint,
      inFlight: Object.fromEntries(this.inFlight),
      perAccount,
      accountInFlight: Object.fromEntries(this.accountInFlight),
    });
    for (const delivery of await this.authorized(claimed, now)) {
      const count = this.inFlight.get(delivery.endpointId) ?? 0;
      const accountCount = this.accountInFlight.get(delivery.accountId) ?? 0;
      if (count >= perEndpoint || accountCount >= perAccount || this.stopped) {
        // Beyond a share (the claim caps them, so only if another pass took slots meanwhile).
        await this.repo.release(delivery.id, delivery.leaseToken);
        continue;
      }
      this.inFlight.set(delivery.endpointId, count + 1);
      this.accountInFlight.set(delivery.accountId, accountCount + 1);
      const task: Promise<void> = this.deliver(delivery)
        .catch((err: unknown) =>
          this.options.logger?.warn({ err, delivery: delivery.id }, 'webhook delivery failed'),
        )
        .finally(() => {
          this.running.delete(task);
          const left = (this.inFlight.get(delivery.endpointId) ?? 1) - 1;
          if (left <= 0) this.inFlight.delete(delivery.endpointId);
          else this.inFlight.set(delivery.endpointId, left);
          const accountLeft = (this.accountInFlight.get(delivery.accountId) ?? 1) - 1;
          if (accountLeft <= 0) this.accountInFlight.delete(delivery.accountId);
          else this.accountInFlight.set(delivery.accountId, accountLeft);
          // A freed slot: claim the next one at once (the completions of one turn come here together).
          this.lookNow();
        });
      this.running.add(task);
    }
  }

  /**
   * The claimed deliveries whose account may still receive them; the others are failed unsent as
   * `not_authorized` (a key was revoked, expired or narrowed since the fan-out). Checked after the claim so
   * the claim stays one statement.
   */
  private async authorized(claimed: ClaimedDelivery[], now: number): Promise<ClaimedDelivery[]> {
    if (claimed.length === 0) return claimed;
    const refused = new Set(
      await this.repo.unauthorized(
        claimed.map((d) => d.id),
        now,
      ),
    );
    if (refused.size === 0) return claimed;
    const skipped = claimed.filter((d) => refused.has(d.id));
    await this.repo.skip(skipped, now);
    for (const d of skipped) {
      this.outcomes.inc({ outcome: 'not_authorized' });
      this.options.logger?.info(
        { delivery: d.id, endpoint: d.endpointId, event: d.eventId, lastError: NOT_AUTHORIZED },
        'webhook delivery not sent: the account no longer holds a live key that may read this event',
      );
    }
    return claimed.filter((d) => !refused.has(d.id));
  }

  /** A Webhook per secret, kept: making one decodes the secret, which costs as much as signing. */
  private signer(secret: string): Webhook {
    let signer = this.signers.get(secret);
    if (!signer) {
      if (this.signers.size >= MAX_SIGNERS) this.signers.clear();
      signer = new Webhook(secret);
      this.signers.set(secret, signer);
    }
    return signer;
  }

  private async deliver(delivery: ClaimedDelivery): Promise<void> {
    const sentAt = this.clock();
    const timestamp = new Date(sentAt);
    // During a rotation both secrets sign; receivers accept any one signature that verifies.
    const signature = delivery.secrets
      .map((secret) => this.signer(secret).sign(delivery.eventId, timestamp, delivery.payload))
      .join(' ');
    const headers: Record<string, string> = {
      'webhook-id': delivery.eventId,
      'webhook-timestamp': String(Math.floor(sentAt / 1000)),
      'webhook-signature': signature,
    };
    // A span per attempt (and its traceparent in the headers) while tracing is on.
    const result = await traceAttempt(delivery, headers, () =>
      sendOnce({
        url: delivery.url,
        body: delivery.payload,
        headers,
        allowHosts: this.options.allowHosts,
        timeoutMs: this.timeoutMs,
        resolve: this.options.resolve,
        signal: this.abort.signal,
      }),
    );
    // Shut down mid-attempt: leave the lease to expire so the delivery is sent again (at least once).
    if (this.stopped) return;
    const now = this.clock();
    let outcome: AttemptOutcome;
    if (result.kind === 'answered' && result.statusCode >= 200 && result.statusCode < 300) {
      this.outcomes.inc({ outcome: 'succeeded' });
      outcome = { kind: 'succeeded', statusCode: result.statusCode };
    } else {
      const answered = result.kind === 'answered';
      this.outcomes.inc({
        outcome: answered ? 'http_error' : result.kind === 'refused' ? 'refused' : 'network_error',
      });
      // The client sees the category; what the resolver or the socket said (addresses, ports) stays here.
      const category = answered ? `http_${result.statusCode}` : result.category;
      this.options.logger?.info(
        {
          delivery: delivery.id,
          endpoint: delivery.endpointId,
          event: delivery.eventId,
          attempt: delivery.attempts + 1,
          lastError: category,
          ...(answered ? {} : { detail: result.error }),
        },
        'webhook delivery attempt failed',
      );
      outcome = {
        kind: 'failed',
        statusCode: answered ? result.statusCode : null,
        error: category,
        nextAttemptAt: nextAttemptAt(
          delivery.attempts + 1,
          now,
          answered ? result.retryAfter : undefined,
          this.options.random,
        ),
        gone: answered && result.statusCode === 410,
      };
    }
    await this.record({ id: delivery.id, leaseToken: delivery.leaseToken, outcome });
  }

  /**
   * Records an attempt with the others finished in the same turn of the event loop: one write transaction
   * for all of them instead of one each. Resolves once it is committed, so a slot is freed (and the next
   * delivery claimed) only after its attempt is on record.
   */
  private record(completion: Completion): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      if (this.finished.length === 0) setImmediate(() => void this.flush());
      this.finished.push({ completion, resolve, reject });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.finished;
    this.finished = [];
    try {
      const held = await this.repo.completeAll(
        batch.map((b) => b.completion),
        this.clock(),
        DISABLE_AFTER_MS,
      );
      batch.forEach((b, i) => b.resolve(held[i]!));
      this.options.onRecorded?.(batch.map((b) => b.completion.outcome.kind));
    } catch (error) {
      for (const b of batch) b.reject(error);
    }
  }
}
