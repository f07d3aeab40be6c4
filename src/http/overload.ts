/**
 * Load shedding (DESIGN 4.7): what the instance cannot answer soon is refused at once with `503 overloaded`
 * and `Retry-After`, in the first onRequest hook, so a refused request costs neither a key lookup nor any
 * database work, and the requests that are admitted keep a bounded latency.
 *
 * The signal is the number of requests in flight (admitted and not yet answered), not the event loop's
 * delay. `@fastify/under-pressure` is not used: it samples event-loop delay or utilization on a timer and
 * then refuses everything or nothing until the next sample. Under a keep-alive flood every refusal is
 * answered by the next request on the same connection at once, so that on/off signal oscillates (refuse all,
 * the loop empties, admit all, the loop stalls), and its timer is itself delayed by the stall it measures.
 * What this bounds is the work one turn of the event loop takes on: every request read in a turn is parsed
 * and then served, stage by stage (key lookups, pages and commits are batched per turn), and requests held
 * by a stalled database keep their place. It is exact, testable, and costs a counter per request.
 * What it does not see (measured, bench/README.md "Overload"): libuv reads at most 1,024 ready sockets per
 * poll, so under thousands of keep-alive connections the requests in flight stay near that batch while the
 * others wait in the kernel, a whole round of turns; and Node accepts about one new connection per turn.
 * A queue-time signal (how long a request waited before it was read) would bound that latency, but Node
 * gives no timestamp for when a socket became readable; the liveness probe's answer is kept prompt by
 * HEALTH_PORT (health-listener.ts) instead.
 *
 * Operational routes (`/healthz`, `/readyz`, `/metrics`) are never refused and not counted: an orchestrator
 * must see the instance alive, and `/readyz` answers 503 while the instance sheds so balancers route away.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import { sendError } from './error-handler.js';
import { ApiError } from './errors.js';

/** How long after its last refusal an instance still reports itself shedding on /readyz. */
export const SHEDDING_WINDOW_MS = 1_000;
/** What a refused client is told to wait: the backlog a full in-flight budget represents clears within it. */
const RETRY_AFTER_SECONDS = '1';

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests admitted since start (background work yields while they keep the loop busy: api-load.ts). */
    requestsAdmitted(): number;
  }
}

export interface OverloadOptions {
  /** Requests in flight beyond which new ones are refused. */
  maxInFlight: number;
  registry: Registry;
  clock: Clock;
}

export interface OverloadState {
  /** Requests admitted since start. */
  admitted(): number;
  /** True while requests are being refused (and for SHEDDING_WINDOW_MS after the last refusal). */
  shedding(): boolean;
}

export function registerOverload(app: FastifyInstance, options: OverloadOptions): OverloadState {
  const { maxInFlight, clock } = options;
  let inFlight = 0;
  let admitted = 0;
  let lastRefusal = -Infinity;
  const refused = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests refused with 503 overloaded because too many were in flight.',
    registers: [options.registry],
  });
  new Gauge({
    name: 'http_requests_in_flight',
    help: 'Requests admitted and not yet answered (operational routes not counted).',
    registers: [options.registry],
    collect() {
      this.set(inFlight);
    },
  });
  // One listener per admitted request; 'close' is emitted once whether the answer finished or the client left.
  const release = (): void => void inFlight--;

  /**
   * Refusals are answered once this turn's reads are done (check phase), not at once. Answered at once, a
   * refused keep-alive client sends its next request while the loop is still reading sockets, libuv keeps
   * polling (up to 48 rounds of 1,024 events per turn) and the admitted requests, which go on in the check
   * phase (batches per turn), starve behind a stream of refusals. Deferred, each connection brings at most
   * one request per turn.
   */
  let refusals: FastifyReply[] = [];
  const refuseAll = (): void => {
    const replies = refusals;
    refusals = [];
    for (const reply of replies) {
      // Closing the refused connection makes its client reconnect before it asks again, instead of re-sending
      // at once on a keep-alive connection: measured with wrk on PostgreSQL + Redis, a 2,000-connection flood
      // went from 0.06 to 0.90 of the 16-connection rate kept (0.02 → 0.75 at 5,000, 0 requests unanswered),
      // on SQLite at 5,000 from 0.39 to 0.95: the re-sent refusals had filled every turn of the event loop.
      reply.header('connection', 'close');
      sendError(
        reply,
        new ApiError('overloaded', undefined, undefined, { 'retry-after': RETRY_AFTER_SECONDS }),
      );
    }
  };

  // Callback style: it runs for every request, and an async hook costs a promise each time.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.access === 'operations') return done();
    if (inFlight >= maxInFlight) {
      refused.inc();
      lastRefusal = clock();
      if (refusals.push(reply) === 1) setImmediate(refuseAll);
      return;
    }
    inFlight++;
    admitted++;
    reply.raw.once('close', release);
    done();
  });

  return {
    admitted: () => admitted,
    shedding: () => inFlight >= maxInFlight || clock() - lastRefusal < SHEDDING_WINDOW_MS,
  };
}
