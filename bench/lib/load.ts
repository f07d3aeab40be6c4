/**
 * Load generation and the interleaved baseline: runs with either load client (wrk, bench/lib/wrk.ts, or
 * autocannon in this process), latencies, the server's CPU time per response, and the rounds that make every
 * throughput a ratio to a bare node:http server measured around it with the same client.
 */
import autocannon from 'autocannon';
import { wrkInstalled, wrkLoad } from './wrk.js';
import { cpuSeconds } from './cpu.js';
import { percentile } from './stats.js';

/**
 * What drives the load. wrk (C, one thread) where it is installed: autocannon is a Node process on the same
 * two cores and slows the baseline more than the service, which flatters every ratio.
 */
export type LoadClient = 'wrk' | 'autocannon';
export const LOAD_CLIENTS: readonly LoadClient[] = ['wrk', 'autocannon'];

export function defaultClient(): LoadClient {
  return wrkInstalled() ? 'wrk' : 'autocannon';
}

export interface Settings {
  /** The load client of this pass (a run with `--client both` makes one pass per client). */
  client: LoadClient;
  quick: boolean;
  profile: boolean;
  connections: number;
  /** Each scenario: a warm-up that is discarded… */
  warmupS: number;
  /** …then `rounds` rounds of `roundS` seconds, each followed by a baseline round. */
  rounds: number;
  roundS: number;
  /** Once, before the shared service is first measured: JIT, heap sizing and caches settle. */
  serviceWarmupS: number;
}

export function settingsFor(quick: boolean, profile: boolean, client: LoadClient): Settings {
  return {
    client,
    quick,
    profile,
    connections: 50,
    warmupS: quick ? 1 : 2,
    rounds: quick ? 2 : 4,
    roundS: quick ? 1.5 : 2.5,
    serviceWarmupS: quick ? 2 : 6,
  };
}

/** One request; its headers are added to (and override) the load's. */
export interface Request {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * Requests each meant to be sent once (a new pet, the next account). autocannon takes one per request as it
 * goes; wrk needs them written out before it starts, so it takes a pool sized from the last run's rate and
 * gives back the ones it did not send, to be sent first next time.
 */
export class FreshRequests {
  private readonly returned: Request[] = [];
  /** Requests per second per connection in the last wrk run (sizes the next pool). */
  ratePerConnection?: number;

  constructor(private readonly make: () => Request) {}

  /** Up to `n` requests: fewer when `make` throws (e.g. no pet left), none lost. */
  take(n: number): Request[] {
    const out = this.returned.splice(0, n);
    try {
      while (out.length < n) out.push(this.make());
    } catch (error) {
      if (out.length === 0) throw error;
    }
    return out;
  }

  giveBack(requests: Request[]): void {
    this.returned.unshift(...requests);
  }
}

/** What a scenario sends, and the server process whose CPU time is charged. */
export interface Load {
  /** The server process under load (its CPU time per response is reported). */
  pid: number;
  /** Origin of the requests; without `requests`, `perClientRequests` or `fresh`, a GET of this URL. */
  url: string;
  headers?: Record<string, string>;
  /** Requests each connection cycles through (method, path, headers, body). */
  requests?: Request[];
  /** Give each connection its own list of requests (e.g. many distinct keys); wrk: one list per thread. */
  perClientRequests?: Request[][];
  /** A new request for every send, never one twice (placeOrder: the next pet, the next account). */
  fresh?: FreshRequests;
  /** Pace the run at this many requests per second over all connections (unset: as fast as answered). */
  overallRate?: number;
  /**
   * Waits, after each round, until the work the round left behind (e.g. webhook deliveries) is done, so
   * that work does not run during the next baseline round and lower it (which would raise the ratio).
   */
  settle?: () => Promise<void>;
}

export interface RunResult {
  rps: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** Latencies (ms) of the 2xx responses, unsorted. */
  latencies: Float64Array;
  /** CPU seconds the server process used during the run. */
  cpuS?: number;
}

/**
 * One run with the given client. autocannon: latencies of the 2xx responses exactly (its own histogram rounds
 * to ms). wrk: latencies of every response from its µs histogram, to 0.1 % of rank; statuses ≥ 400 are its
 * non-2xx.
 */
export function load(
  target: Load,
  durationS: number,
  connections: number,
  client: LoadClient,
): Promise<RunResult> {
  return client === 'wrk'
    ? wrkLoad(target, durationS, connections)
    : autocannonLoad(target, durationS, connections);
}

function autocannonLoad(target: Load, durationS: number, connections: number): Promise<RunResult> {
  return new Promise((resolveLoad, reject) => {
    let latencies = new Float64Array(1 << 16);
    let n = 0;
    let clientIndex = 0;
    const withDefaults = (r: Request): autocannon.Request => ({
      ...r,
      headers: { ...target.headers, ...r.headers },
    });
    const perClient = target.perClientRequests?.map((list) => list.map(withDefaults));
    const fresh = target.fresh;
    const requests = fresh
      ? [{ setupRequest: (): autocannon.Request => withDefaults(fresh.take(1)[0]!) }]
      : target.requests?.map(withDefaults);
    const cpuBefore = cpuSeconds(target.pid);
    const instance = autocannon(
      {
        url: target.url,
        connections,
        pipelining: 1,
        duration: durationS,
        ...(target.overallRate !== undefined ? { overallRate: target.overallRate } : {}),
        headers: target.headers,
        requests,
        setupClient: perClient
          ? (client) => client.setRequests(perClient[clientIndex++ % perClient.length]!)
          : undefined,
      },
      (error, result) => {
        if (error) return reject(error);
        const cpuAfter = cpuSeconds(target.pid);
        const ok = result['2xx'];
        resolveLoad({
          rps: ok / result.duration,
          requests: ok,
          non2xx: result.non2xx,
          errors: result.errors,
          latencies: latencies.subarray(0, n),
          cpuS: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode < 200 || statusCode >= 300) return;
      if (n === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[n++] = responseTime;
    });
  });
}

export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Measured {
  /** Median over the rounds. */
  rps: number;
  /** Median over the rounds of (scenario req/s ÷ mean of the baseline rounds either side); 1 without rounds. */
  ratio: number;
  ratios: number[];
  /** Over every 2xx response of every run. */
  p50: number;
  p99: number;
  /** Server CPU time per 2xx response, µs: barely affected by who else uses the machine. */
  cpuUs?: number;
  non2xx: number;
  errors: number;
}

export function summarise(runs: RunResult[], ratios: number[] = []): Measured {
  const all = new Float64Array(runs.reduce((a, r) => a + r.latencies.length, 0));
  let offset = 0;
  for (const r of runs) {
    all.set(r.latencies, offset);
    offset += r.latencies.length;
  }
  all.sort();
  const requests = runs.reduce((a, r) => a + r.requests, 0);
  const cpu = runs.every((r) => r.cpuS !== undefined) ? runs.reduce((a, r) => a + r.cpuS!, 0) : undefined;
  return {
    rps: median(runs.map((r) => r.rps)),
    ratio: ratios.length ? median(ratios) : 1,
    ratios,
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    cpuUs: cpu !== undefined && requests > 0 ? (cpu * 1e6) / requests : undefined,
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}

/**
 * Measures scenarios interleaved with the baseline: after a warm-up, `rounds` × (scenario, baseline), each
 * scenario round compared with the baseline rounds just before and after it. A burst of load from
 * elsewhere on the machine then spoils one round's ratio, not the scenario's median.
 */
export class Interleaved {
  readonly baselineRuns: RunResult[] = [];

  constructor(
    private readonly baseline: Load,
    private readonly settings: Settings,
    private readonly log: (line: string) => void,
  ) {}

  private run(target: Load, durationS: number): Promise<RunResult> {
    return load(target, durationS, this.settings.connections, this.settings.client);
  }

  private async baselineRound(): Promise<RunResult> {
    const run = await this.run(this.baseline, this.settings.roundS);
    this.baselineRuns.push(run);
    return run;
  }

  async measure(label: string, target: Load): Promise<Measured> {
    const { warmupS, roundS, rounds } = this.settings;
    if (this.baselineRuns.length === 0) {
      await this.run(this.baseline, warmupS);
      await this.baselineRound();
    }
    await this.run(target, warmupS);
    await target.settle?.();
    const runs: RunResult[] = [];
    const ratios: number[] = [];
    let before = this.baselineRuns.at(-1)!.rps;
    for (let round = 0; round < rounds; round++) {
      const run = await this.run(target, roundS);
      await target.settle?.();
      const after = (await this.baselineRound()).rps;
      runs.push(run);
      ratios.push(run.rps / ((before + after) / 2));
      before = after;
    }
    const m = summarise(runs, ratios);
    const cpu = m.cpuUs === undefined ? '' : `  cpu ${m.cpuUs.toFixed(0)} µs/req`;
    const problems = m.non2xx || m.errors ? `  (!) ${m.non2xx} non-2xx, ${m.errors} errors` : '';
    this.log(
      `${`${label} (${this.settings.client})`.padEnd(56)} ${m.rps.toFixed(0).padStart(6)} req/s  ratio ${m.ratio.toFixed(2)} ` +
        `[${ratios.map((r) => r.toFixed(2)).join(' ')}]  p50 ${m.p50.toFixed(2)}  p99 ${m.p99.toFixed(2)} ms${cpu}${problems}`,
    );
    return m;
  }

  summary(): Measured {
    return summarise(this.baselineRuns);
  }
}
