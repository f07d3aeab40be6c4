/** One caller's outcome within a batch. */
export type Settled<T> = { value: T } | { error: unknown };

export function settle<T>(fn: () => T): Settled<T> {
  try {
    return { value: fn() };
  } catch (error) {
    return { error };
  }
}

/** settle for an asynchronous call. */
export async function settleAsync<T>(fn: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { value: await fn() };
  } catch (error) {
    return { error };
  }
}

/** How many callers of one batch are settled per turn of the event loop; see TurnBatch.settleFrom. */
export const SETTLED_PER_TURN = 256;

interface Pending<In, Out> {
  input: In;
  resolve: (value: Out) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects the calls made during one turn of the event loop and runs them together at its end
 * (`setImmediate`: after the poll phase has read every request that had arrived), each caller getting its own
 * outcome. A quiet server runs each call alone, a moment later.
 *
 * Why, for a synchronous driver like better-sqlite3: running each request's database work the moment it
 * asks interleaves SQLite, Fastify and socket writes request by request; deferring to the end of the turn
 * lets the requests of one turn go through each stage back to back, and lets work that is per turn rather
 * than per request (a `PRAGMA data_version` check, a commit) be done once, which lowers the server's CPU per
 * request under concurrent load (docs/performance.md). For PostgreSQL it turns one round trip per request
 * into one per turn (key lookups, list pages).
 *
 * Deferring never makes an answer staler than the request: the batch runs after every request in it has
 * arrived, so a change committed before a request arrived is seen by it. A large batch's callers are
 * settled a slice per turn (SETTLED_PER_TURN), so the loop keeps polling sockets while a flood's batch
 * goes on.
 *
 * Written here rather than taken from DataLoader (which can be scheduled with setImmediate too): DataLoader
 * is a keyed, caching loader with an asynchronous batch function, and one of the uses here is a write; what
 * is needed is twenty lines.
 */
export class TurnBatch<In, Out> {
  private pending: Pending<In, Out>[] = [];

  /**
   * @param run does the work of a batch, returning (or resolving to) one outcome per input, in order; if
   *   it throws or rejects, every caller of the batch gets that error.
   * @param translate maps errors before callers see them.
   */
  constructor(
    private readonly run: (inputs: In[]) => Settled<Out>[] | Promise<Settled<Out>[]>,
    private readonly translate: (error: unknown) => unknown = (error) => error,
  ) {}

  add(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    const fail = (error: unknown): void => {
      for (const call of batch) call.reject(this.translate(error));
    };
    const answer = (outcomes: Settled<Out>[]): void => {
      // A run that lost or invented an outcome would leave a caller hanging or answer one with another's
      // result: that is a bug, and every caller of the batch fails with it rather than guess.
      if (!Array.isArray(outcomes) || outcomes.length !== batch.length) {
        fail(
          new Error(
            `batch returned ${Array.isArray(outcomes) ? outcomes.length : 'no'} outcomes for ${batch.length} callers`,
          ),
        );
        return;
      }
      this.settleFrom(batch, outcomes, 0);
    };
    let outcomes: Settled<Out>[] | Promise<Settled<Out>[]>;
    try {
      outcomes = this.run(batch.map((call) => call.input));
    } catch (error) {
      fail(error);
      return;
    }
    // A synchronous run is answered at once, without a promise hop.
    if (Array.isArray(outcomes)) answer(outcomes);
    else outcomes.then(answer, fail);
  }

  /**
   * Settles the callers from `start`, at most SETTLED_PER_TURN of them now and the rest in later turns. Each
   * caller goes on at once with the rest of its request (handler, answer), so settling a flood's batch of
   * thousands at once made one turn of the event loop last as long as all their work (0.5 s and more with
   * 5,000 connections): no socket was read meanwhile, and a new connection (a liveness probe's) is read only
   * in the turn after the one that accepted it. In slices, the loop polls between them.
   */
  private settleFrom(batch: Pending<In, Out>[], outcomes: Settled<Out>[], start: number): void {
    const end = Math.min(batch.length, start + SETTLED_PER_TURN);
    for (let i = start; i < end; i++) {
      const call = batch[i]!;
      const outcome = outcomes[i]!;
      if ('error' in outcome) call.reject(this.translate(outcome.error));
      else call.resolve(outcome.value);
    }
    if (end < batch.length) setImmediate(() => this.settleFrom(batch, outcomes, end));
  }
}
