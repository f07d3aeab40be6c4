/**
 * The benchmark's load run with wrk (bench/lib/requests.lua): one C process with one thread, so the load
 * client takes far less of this 2-core machine than autocannon (a Node process) does, and so slows the
 * baseline less. Every request is written out in full beforehand (method, path, headers, body) and the
 * script sends them in order; requests meant to be sent once (Load.fresh) are handed over as a pool sized
 * from the rate of the previous run, and those not taken are given back.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FreshRequests, Load, Request, RunResult } from './load.js';
import { cpuSeconds } from './cpu.js';

const SCRIPT = fileURLToPath(new URL('requests.lua', import.meta.url));
/**
 * One thread drives 50 keep-alive connections far faster than one Node process answers them, and leaves the
 * other core to the server (and, for the baseline, does not compete with it).
 */
const THREADS = 1;
/** A response slower than this counts as a timeout (wrk's latency histogram has one slot per µs up to it). */
const TIMEOUT_S = 5;
/** How long a run may take past its duration before the wait is given up (start-up, the summary). */
const GRACE_MS = 30_000;

export function wrkInstalled(): boolean {
  return !spawnSync('wrk', ['--version']).error;
}

/** The request as bytes on the wire (HTTP/1.1, keep-alive, Content-Length when there is a body). */
function raw(host: string, defaults: Record<string, string> | undefined, r: Request): string {
  const headers: Record<string, string> = { host };
  for (const [name, value] of Object.entries({ ...defaults, ...r.headers }))
    headers[name.toLowerCase()] = value;
  if (r.body !== undefined) headers['content-length'] = String(Buffer.byteLength(r.body));
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${r.method ?? 'GET'} ${r.path} HTTP/1.1\r\n${lines.join('')}\r\n${r.body ?? ''}`;
}

function records(requests: string[]): string {
  return requests.map((r) => `${Buffer.byteLength(r)}\n${r}`).join('');
}

/** Requests per fresh pool when no run has measured the rate yet: generous, the unused ones are given back. */
const FIRST_POOL_PER_CONNECTION_PER_S = 400;
/** A pool holds at least this many times what the last rate would take: wrapping round fails the run. */
const POOL_MARGIN = 3;

/** Per-thread request lists for one run. */
function lists(target: Load, durationS: number, connections: number, threads: number): Request[][] {
  const url = new URL(target.url);
  if (target.fresh) {
    // Never below the first guess: a round may well run faster than the one before it (a warm-up, a burst
    // of load elsewhere), and the requests not sent come back anyway.
    const perConnection = Math.max(
      FIRST_POOL_PER_CONNECTION_PER_S,
      POOL_MARGIN * (target.fresh.ratePerConnection ?? 0),
    );
    const size = Math.max(1000, Math.ceil(perConnection * connections * durationS));
    const pool = target.fresh.take(Math.ceil(size / threads) * threads);
    return Array.from({ length: threads }, (_, t) =>
      pool.slice((t * pool.length) / threads, ((t + 1) * pool.length) / threads),
    );
  }
  if (target.perClientRequests) {
    // wrk hands requests out per thread, not per connection: a thread cycles through the lists of the
    // connections it would have had, one after the other (the same requests, as evenly spread).
    const per = target.perClientRequests;
    return Array.from({ length: threads }, (_, t) =>
      Array.from({ length: connections }, (_, c) => c)
        .filter((c) => c % threads === t)
        .flatMap((c) => per[c % per.length]!),
    );
  }
  const list = target.requests ?? [{ method: 'GET', path: `${url.pathname}${url.search}` }];
  // Each thread starts at another point of the list, so threads do not send the same request together.
  return Array.from({ length: threads }, (_, t) => {
    const start = Math.floor((t * list.length) / threads);
    return [...list.slice(start), ...list.slice(0, start)];
  });
}

interface WrkSummary {
  requests: number;
  durationUs: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  exhausted: number;
  taken: number[];
}

/** Runs wrk for `durationS` (stopped with SIGINT, so a fraction of a second is kept: wrk's -d is whole seconds). */
export async function wrkLoad(target: Load, durationS: number, connections: number): Promise<RunResult> {
  const threads = Math.min(THREADS, connections);
  const url = new URL(target.url);
  const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-bench-wrk-'));
  const perThread = lists(target, durationS, connections, threads);
  try {
    perThread.forEach((list, t) =>
      writeFileSync(
        join(dir, `requests.${t + 1}`),
        records(list.map((r) => raw(url.host, target.headers, r))),
      ),
    );
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      WRK_REQUESTS: join(dir, 'requests'),
      ...(target.fresh ? { WRK_ONCE: '1' } : {}),
      // Every connection waits this long before each request: all together, overallRate per second.
      ...(target.overallRate
        ? { WRK_DELAY_MS: String(Math.round((connections * 1000) / target.overallRate)) }
        : {}),
    };
    const args = [
      ...['-t', String(threads), '-c', String(connections), '-d', `${Math.ceil(durationS) + 60}s`],
      ...['--timeout', `${TIMEOUT_S}s`, '-s', SCRIPT, `${url.origin}/`],
    ];
    const cpuBefore = cpuSeconds(target.pid);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      // wrk stops its threads on SIGINT and still prints its summary and runs done().
      const stop = setTimeout(() => child.kill('SIGINT'), durationS * 1000);
      const giveUp = setTimeout(() => child.kill('SIGKILL'), durationS * 1000 + GRACE_MS);
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        clearTimeout(stop);
        clearTimeout(giveUp);
        if (code === 0) resolve(stdout);
        else reject(new Error(`wrk exited ${code ?? signal}: ${stderr.trim() || stdout.trim()}`));
      });
    });
    const cpuAfter = cpuSeconds(target.pid);
    const json = out.split('\n').find((l) => l.startsWith('WRKJSON '));
    const quantiles = out.split('\n').find((l) => l.startsWith('WRKQUANTILES '));
    if (!json || !quantiles) throw new Error(`wrk printed no summary:\n${out}`);
    const s = JSON.parse(json.slice('WRKJSON '.length)) as WrkSummary;
    const seconds = s.durationUs / 1e6;
    const ok = s.requests - s.status;
    if (target.fresh) giveBack(target.fresh, perThread, s, connections, seconds);
    if (s.exhausted > 0) {
      process.stderr.write(`[bench] wrk: the pool of fresh requests ran out, ${s.exhausted} sent again\n`);
    }
    return {
      rps: ok / seconds,
      requests: ok,
      non2xx: s.status,
      // Requests sent again because the pool ran out count as errors: they are not what the scenario asked.
      errors: s.connect + s.read + s.write + s.timeout + s.exhausted,
      latencies: latencies(
        quantiles
          .slice('WRKQUANTILES '.length)
          .trim()
          .split(' ')
          .map((q) => Number(q) / 1000),
        s.requests,
      ),
      cpuS: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The requests no thread took go back to the pool; the rate sizes the next pool. */
function giveBack(
  fresh: FreshRequests,
  perThread: Request[][],
  s: WrkSummary,
  connections: number,
  seconds: number,
): void {
  fresh.giveBack(perThread.flatMap((list, t) => list.slice(s.taken[t] ?? list.length)));
  const taken = s.taken.reduce((a, b) => a + b, 0);
  if (seconds > 0) fresh.ratePerConnection = taken / seconds / connections;
}

/**
 * `n` latencies (ms) with the distribution of wrk's 1,000 quantiles: response i of n gets the quantile its
 * rank falls in. Percentiles over several runs put together are then exact to 0.1 % of rank.
 */
function latencies(quantiles: number[], n: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = quantiles[Math.min(quantiles.length - 1, Math.floor((i * quantiles.length) / n))]!;
  }
  return out;
}
