/**
 * Load shedding (docs/operations.md, "Overload"): what the instance cannot answer soon is refused at once with `503 overloaded`
 * and `Retry-After`, in the first onRequest hook, so a refused request costs neither a key lookup nor any
 * database work, and the requests that are admitted keep a bounded latency.
 *
 * The signal is the number of requests in flight (admitted and not yet answered), not the event loop's
 * delay. `@fastify/under-pressure` is not used: it samples event-loop delay or utilization on a timer and
 * then refuses everything or nothing until the next sample. Under a keep-alive flood every refusal is
 * answered by the next request on the same connection at once, so that on/off signal oscillates (refuse all,
 * the loop empties, admit all, the loop stalls), and its timer is itself delayed by the stall it measures.
 * What this bounds is the work the event loop has taken on: every request read in a turn is parsed and then
 * served, stage by stage (key lookups, pages and commits are batched per turn, their callers settled a few
 * hundred per turn: db/turn-batch.ts), and requests held by a stalled database keep their place. It is
 * exact, testable, and costs a counter per request.
 * The budget is not a fixed number: it follows the mean time admitted requests took (OVERLOAD_QUEUE_MS), so
 * it is larger on a fast backend than on a slow one and falls when the database stalls.
 * What it does not see: a request waiting in the kernel before it is read (a connection not yet accepted, or
 * a refused connection, which is deliberately left unread for a while).
 *
 * Operational routes (`/healthz`, `/readyz`, `/metrics`) are never refused and not counted: an orchestrator
 * must see the instance alive, and `/readyz` answers 503 while the instance sheds so balancers route away.
 */
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import { sendError } from './error-handler.js';
import { ApiError } from './errors.js';

/** How long after its last refusal an instance still reports itself shedding on /readyz. */
export const SHEDDING_WINDOW_MS = 1_000;
/**
 * How long a refused connection is not read, at least. A refused client on a keep-alive connection sends its
 * next request at once (wrk does; Retry-After is advice); read at once, it is refused again, and thousands of
 * such clients fill every turn of the event loop with refusals (measured: most of the rate lost under a flood of
 * connections on SQLite). Closing the connection instead made each client reconnect, which is dearer still.
 * Not reading it leaves the next request in the kernel, at no cost.
 */
export const REFUSED_CONNECTION_PAUSE_MS = 400;
/**
 * The pause doubles, up to this, over each window in which refusals outnumbered the admitted requests
 * answered, and halves back otherwise. A refusal costs the loop about what an answer does (measured under a
 * flood of connections): when most of what the loop does is refusing, the
 * admitted requests wait behind the refusals, the budget shrinks and more is refused. Reading refused
 * clients less often is what gives the loop back.
 */
export const MAX_REFUSED_CONNECTION_PAUSE_MS = 1_600;
/**
 * Every refusal is one of a few errors (one per whole second of pause), built once: an Error captures a stack
 * trace when it is made (a large share of each refusal's cost under a flood). Retry-After tells the client the pause its
 * connection gets, rounded up.
 */
const OVERLOADED_BY_SECONDS = new Map(
  Array.from({ length: Math.ceil(MAX_REFUSED_CONNECTION_PAUSE_MS / 1000) }, (_, i) => i + 1).map(
    (seconds) => [seconds, new ApiError('overloaded', { headers: { 'retry-after': String(seconds) } })],
  ),
);
const overloadedFor = (pauseMs: number): ApiError =>
  OVERLOADED_BY_SECONDS.get(Math.max(1, Math.ceil(pauseMs / 1000)))!;
/** How often the in-flight budget is adjusted to the wait admitted requests had. */
export const BUDGET_WINDOW_MS = 250;
/** The budget never falls below this (nor above OVERLOAD_MAX_IN_FLIGHT). */
export const MIN_IN_FLIGHT_BUDGET = 256;
/** When the response was admitted (clock ms), read back when it closes. */
const admittedAt = Symbol('admittedAt');
type TimedResponse = ServerResponse & { [admittedAt]?: number };

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests admitted since start (background work yields while they keep the loop busy: api-load.ts). */
    requestsAdmitted(): number;
  }
}

export interface OverloadOptions {
  /** Requests in flight beyond which new ones are always refused. */
  maxInFlight: number;
  /**
   * The wait admitted requests should have: the in-flight budget (at most `maxInFlight`) shrinks while their
   * mean time from admission to answer is longer, and grows while it is shorter and the budget refuses.
   */
  queueMs: number;
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
  const { maxInFlight, queueMs, clock } = options;
  let inFlight = 0;
  let admitted = 0;
  let lastRefusal = -Infinity;
  // Until a window has been measured the budget is the configured maximum.
  let budget = maxInFlight;
  let windowStart = clock();
  let windowAnswered = 0;
  let windowWaited = 0;
  let windowRefused = 0;
  let pauseMs = REFUSED_CONNECTION_PAUSE_MS;
  const refused = new Counter({
    name: 'pet_adoption_http_requests_shed_total',
    help: 'Requests refused with 503 overloaded because too many were in flight.',
    registers: [options.registry],
  });
  new Gauge({
    name: 'pet_adoption_http_requests_in_flight',
    help: 'Requests admitted and not yet answered (operational routes not counted).',
    registers: [options.registry],
    collect() {
      this.set(inFlight);
    },
  });
  new Gauge({
    name: 'pet_adoption_http_refused_connection_pause_seconds',
    help: 'How long a refused keep-alive connection is not read (its Retry-After, rounded up).',
    registers: [options.registry],
    collect() {
      this.set(pauseMs / 1000);
    },
  });
  new Gauge({
    name: 'pet_adoption_http_requests_in_flight_budget',
    help: 'Requests in flight beyond which new ones are refused (adjusted to keep their wait near OVERLOAD_QUEUE_MS).',
    registers: [options.registry],
    collect() {
      this.set(budget);
    },
  });
  // One listener per admitted request; 'close' is emitted once whether the answer finished or the client left.
  const release = function (this: TimedResponse): void {
    inFlight--;
    windowAnswered++;
    windowWaited += clock() - (this[admittedAt] ?? 0);
  };

  /**
   * Lazily, on a request, at most once per window (no timer: a busy loop would delay its callback anyway).
   * Proportional to how far the mean wait is from the target, at most halving or doubling per window. It grows
   * only while it refuses: a budget that nothing reaches says nothing about the wait at that many.
   * A fixed budget could not fit both backends: 1,000 in flight is 0.1 s of work on SQLite and 0.3 s on
   * PostgreSQL + Redis here, and a database that stalls makes any number too many.
   */
  const adjustBudget = (now: number): void => {
    if (now - windowStart < BUDGET_WINDOW_MS) return;
    if (windowAnswered > 0) {
      const meanWait = windowWaited / windowAnswered;
      if (meanWait > queueMs || windowRefused > 0) {
        const factor = Math.min(2, Math.max(0.5, queueMs / Math.max(meanWait, 1)));
        budget = Math.min(maxInFlight, Math.max(MIN_IN_FLIGHT_BUDGET, Math.round(budget * factor)));
      }
    }
    pauseMs =
      windowRefused > windowAnswered
        ? Math.min(MAX_REFUSED_CONNECTION_PAUSE_MS, pauseMs * 2)
        : Math.max(REFUSED_CONNECTION_PAUSE_MS, pauseMs / 2);
    windowStart = now;
    windowAnswered = 0;
    windowWaited = 0;
    windowRefused = 0;
  };

  /**
   * Refusals are answered once this turn's reads are done (check phase), not at once. Answered at once, a
   * refused keep-alive client sends its next request while the loop is still reading sockets, libuv keeps
   * polling (up to 48 rounds of 1,024 events per turn) and the admitted requests, which go on in the check
   * phase (batches per turn), starve behind a stream of refusals. Then the refused connections are not read
   * for the current pause (REFUSED_CONNECTION_PAUSE_MS to MAX_REFUSED_CONNECTION_PAUSE_MS).
   */
  let refusals: FastifyReply[] = [];
  const refuseAll = (): void => {
    const replies = refusals;
    refusals = [];
    const paused: Socket[] = [];
    const overloaded = overloadedFor(pauseMs);
    for (const reply of replies) {
      sendError(reply, overloaded);
      const socket = reply.raw.socket;
      // A real connection (app.inject's stand-in has nothing to pause).
      if (socket instanceof Socket && !socket.destroyed) {
        socket.pause();
        paused.push(socket);
      }
    }
    // One timer per turn's refusals. A client that closes meanwhile is noticed when its socket is read again.
    if (paused.length > 0) setTimeout(resumeAll, pauseMs, paused).unref();
  };

  // Callback style: it runs for every request, and an async hook costs a promise each time.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.access === 'operations') return done();
    const now = clock();
    adjustBudget(now);
    if (inFlight >= budget) {
      refused.inc();
      windowRefused++;
      lastRefusal = now;
      if (refusals.push(reply) === 1) setImmediate(refuseAll);
      return;
    }
    inFlight++;
    admitted++;
    (reply.raw as TimedResponse)[admittedAt] = now;
    reply.raw.once('close', release);
    done();
  });

  return {
    admitted: () => admitted,
    shedding: () => inFlight >= budget || clock() - lastRefusal < SHEDDING_WINDOW_MS,
  };
}

function resumeAll(sockets: Socket[]): void {
  for (const socket of sockets) if (!socket.destroyed) socket.resume();
}
