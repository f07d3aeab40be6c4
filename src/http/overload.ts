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
 *
 * Kept connections wait their turn in the kernel. While the budget is full, a connection whose answer has
 * just been written is not read again (`socket.pause()`): its next request stays in the kernel, at no cost,
 * and the connection joins a queue, oldest first. As answers free the budget, the oldest are read again, each
 * with a place held for its next request. So under a flood of keep-alive clients every client waits about
 * as long as every other (the clients ÷ the answers a second), instead of some being refused again and again
 * while others are served, and a turn of the event loop holds only what the budget admits, so a new
 * connection (a polite client's, a liveness probe's) is read and answered soon. No connection waits in the
 * queue longer than MAX_QUEUED_MS: then it is read and its request refused, and while the queue is that old,
 * connections are not queued but refused as they are read.
 * What the budget does not see: a request waiting in the kernel before it is read (a connection not yet
 * accepted, a queued one, or a refused one, which is deliberately left unread for a while).
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
 * While the queue is older than MAX_QUEUED_MS (otherwise a refused connection waits its turn in it), how long a
 * refused connection is not read, at least. A refused client on a keep-alive connection sends its
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
/**
 * The longest a kept connection waits in the queue before its next request is read. Beyond it the instance
 * cannot answer soon, and refusing at once (the client may go elsewhere) is better than a longer wait.
 */
export const MAX_QUEUED_MS = 1_000;
/**
 * The budget at start, until windows have been measured. Small, so that the first turns under a sudden flood
 * stay short (the rest of the flood waits in the queue); it grows while the queue is full and the wait short.
 */
export const INITIAL_IN_FLIGHT_BUDGET = 512;
/** How often the in-flight budget is adjusted to the wait admitted requests had. */
export const BUDGET_WINDOW_MS = 250;
/** The budget never falls below this (nor above OVERLOAD_MAX_IN_FLIGHT). */
export const MIN_IN_FLIGHT_BUDGET = 256;
/** When the response was admitted (clock ms), read back when it closes. */
const admittedAt = Symbol('admittedAt');
/** The admitted request's connection (a real one), queued when its answer is written under a full budget. */
const connectionOf = Symbol('connectionOf');
type TimedResponse = ServerResponse & { [admittedAt]?: number; [connectionOf]?: QueuedSocket };
/** When a queued connection joined the queue (clock ms); cleared when it is read again. */
const queuedAt = Symbol('queuedAt');
/** Set on a connection read again in its turn: a place in the budget is held for its next request. */
const placeHeld = Symbol('placeHeld');
type QueuedSocket = Socket & { [queuedAt]?: number; [placeHeld]?: boolean };

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
  let budget = Math.min(maxInFlight, INITIAL_IN_FLIGHT_BUDGET);
  let windowStart = clock();
  let windowAnswered = 0;
  let windowWaited = 0;
  let windowRefused = 0;
  let windowQueued = 0;
  let pauseMs = REFUSED_CONNECTION_PAUSE_MS;
  // Kept connections waiting their turn, oldest first from `head` (compacted as it empties).
  const queue: QueuedSocket[] = [];
  let head = 0;
  // Places in the budget held for connections read again at the last drain, until their request comes.
  let held = 0;
  const heldFor: QueuedSocket[] = [];
  let drainScheduled = false;
  let expiry: NodeJS.Timeout | undefined;
  const queued = (): number => queue.length - head;
  const queueTooOld = (now: number): boolean =>
    queued() > 0 && now - (queue[head]![queuedAt] ?? now) >= MAX_QUEUED_MS;

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
    name: 'pet_adoption_http_connections_queued',
    help: 'Kept connections waiting their turn (not read until the in-flight budget has room for them).',
    registers: [options.registry],
    collect() {
      this.set(queued());
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

  /** Not read until its turn: the request it sends next waits in the kernel. */
  const enqueue = (socket: QueuedSocket, now: number): void => {
    socket.pause();
    socket[queuedAt] = now;
    queue.push(socket);
    windowQueued++;
    expiry ??= setTimeout(expire, MAX_QUEUED_MS).unref();
  };
  const readAgain = (socket: QueuedSocket): void => {
    socket[queuedAt] = undefined;
    if (!socket.destroyed) socket.resume();
  };
  const compact = (): void => {
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
  };
  /** Connections that waited MAX_QUEUED_MS are read again without a place: their requests are refused. */
  const expireOld = (now: number): void => {
    while (queueTooOld(now)) readAgain(queue[head++]!);
    compact();
  };
  function expire(): void {
    expiry = undefined;
    expireOld(clock());
    if (queued() > 0) expiry = setTimeout(expire, MAX_QUEUED_MS).unref();
  }
  /**
   * Once per turn while connections wait (check phase, so the event loop polls between two drains): the oldest
   * are read again, as many as the budget has room for, each with its place held. A place not taken by the
   * next drain was held for an idle connection (it sends nothing yet) and is given back.
   */
  const drain = (): void => {
    drainScheduled = false;
    for (const socket of heldFor) {
      if (socket[placeHeld]) {
        socket[placeHeld] = false;
        held--;
      }
    }
    heldFor.length = 0;
    const now = clock();
    expireOld(now);
    let room = budget - inFlight - held;
    while (room > 0 && head < queue.length) {
      const socket = queue[head++]!;
      if (socket.destroyed) continue;
      socket[placeHeld] = true;
      held++;
      heldFor.push(socket);
      readAgain(socket);
      room--;
    }
    compact();
    // The next turn gives back the places of those that sent nothing (idle) and reads more of the queue.
    if (heldFor.length > 0) scheduleDrain();
  };
  const scheduleDrain = (): void => {
    if (drainScheduled) return;
    drainScheduled = true;
    setImmediate(drain);
  };

  // One listener per admitted request; 'close' is emitted once whether the answer finished or the client left.
  const release = function (this: TimedResponse): void {
    inFlight--;
    windowAnswered++;
    const now = clock();
    windowWaited += now - (this[admittedAt] ?? 0);
    const socket = this[connectionOf];
    // The answer is written; under a full budget the connection's next request waits its turn.
    if (
      socket !== undefined &&
      !socket.destroyed &&
      (queued() > 0 || inFlight + held + 1 >= budget) &&
      !queueTooOld(now)
    ) {
      enqueue(socket, now);
    }
    if (queued() > 0) scheduleDrain();
  };

  /**
   * Lazily, on a request, at most once per window (no timer: a busy loop would delay its callback anyway).
   * Proportional to how far the mean wait is from the target, at most halving or doubling per window. It grows
   * only while the budget is full (it refuses, or connections wait their turn): a budget that nothing reaches
   * says nothing about the wait at that many.
   * A fixed budget could not fit both backends and every route: 500 requests in flight are 0.05 s of work on
   * SQLite and 0.1 s on PostgreSQL + Redis here, uncached searches cost ten times a cached page, and a
   * database that stalls makes any number too many.
   */
  const adjustBudget = (now: number): void => {
    if (now - windowStart < BUDGET_WINDOW_MS) return;
    if (windowAnswered > 0) {
      const meanWait = windowWaited / windowAnswered;
      if (meanWait > queueMs || windowRefused > 0 || windowQueued > 0) {
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
    windowQueued = 0;
  };

  /**
   * Refusals are answered once this turn's reads are done (check phase), not at once. Answered at once, a
   * refused keep-alive client sends its next request while the loop is still reading sockets, libuv keeps
   * polling (up to 48 rounds of 1,024 events per turn) and the admitted requests, which go on in the check
   * phase (batches per turn), starve behind a stream of refusals. Then the refused connection waits its turn
   * in the queue, or, while the queue is older than MAX_QUEUED_MS, is not read for the current pause
   * (REFUSED_CONNECTION_PAUSE_MS to MAX_REFUSED_CONNECTION_PAUSE_MS).
   */
  let refusals: FastifyReply[] = [];
  const refuseAll = (): void => {
    const replies = refusals;
    refusals = [];
    const paused: Socket[] = [];
    const overloaded = overloadedFor(pauseMs);
    const now = clock();
    const queueing = !queueTooOld(now);
    for (const reply of replies) {
      sendError(reply, overloaded);
      const socket = reply.raw.socket;
      // A real connection (app.inject's stand-in has nothing to pause).
      if (socket instanceof Socket && !socket.destroyed) {
        if (queueing) {
          enqueue(socket, now);
        } else {
          socket.pause();
          paused.push(socket);
        }
      }
    }
    if (queued() > 0) scheduleDrain();
    // One timer per turn's refusals. A client that closes meanwhile is noticed when its socket is read again.
    if (paused.length > 0) setTimeout(resumeAll, pauseMs, paused).unref();
  };

  // Callback style: it runs for every request, and an async hook costs a promise each time.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.routeOptions.config.access === 'operations') return done();
    const now = clock();
    adjustBudget(now);
    const raw = reply.raw as TimedResponse;
    const socket = raw.socket instanceof Socket ? (raw.socket as QueuedSocket) : undefined;
    if (socket?.[placeHeld]) {
      // Read again in its turn: the place held for it is now this request's.
      socket[placeHeld] = false;
      held--;
    } else if (inFlight + held >= budget) {
      refused.inc();
      windowRefused++;
      lastRefusal = now;
      if (refusals.push(reply) === 1) setImmediate(refuseAll);
      return;
    }
    inFlight++;
    admitted++;
    raw[admittedAt] = now;
    raw[connectionOf] = socket;
    raw.once('close', release);
    done();
  });

  return {
    admitted: () => admitted,
    shedding: () => inFlight + held >= budget || queued() > 0 || clock() - lastRefusal < SHEDDING_WINDOW_MS,
  };
}

function resumeAll(sockets: Socket[]): void {
  for (const socket of sockets) if (!socket.destroyed) socket.resume();
}
