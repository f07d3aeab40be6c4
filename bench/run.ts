/**
 * `npm run bench`: measures the built service the way users run it, against a bare node:http baseline
 * measured in the same run, and prints one table (also written to bench/results.json).
 *
 *   npm run bench                      full run (a few minutes)
 *   npm run bench -- --quick           smoke run: short scenarios, short soak
 *   npm run bench -- --profile         also write V8 CPU profiles of the service to bench/profiles/
 *   npm run bench -- --only list20,get  run only these scenarios (plus the baselines); names in SCENARIOS
 *   npm run bench -- --no-postgres     skip the PostgreSQL + Redis row
 *
 * Every throughput is a ratio to the baseline (same response bytes and headers, no work), measured in the
 * same run and interleaved with the scenarios, because this 2-core machine is shared and absolute numbers
 * drift. Load comes from autocannon in this process: 50 connections, a warm-up that is discarded, then a
 * measured run.
 */
import autocannon from 'autocannon';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  readSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { generateApiKey, generateKeyId, hashApiKey, keyHint } from '../src/modules/accounts/keys.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import type { RecordedResponse } from './baseline-server.js';
import { accountRepository } from '../src/modules/accounts/repository.js';

const execFileAsync = promisify(execFile);
const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(BENCH_DIR, '..');
const CLI = join(ROOT, 'dist', 'cli.js');

// ---------------------------------------------------------------------------------------------- options

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    only: { type: 'string' },
    'no-postgres': { type: 'boolean', default: false },
  },
});

const QUICK = opts.quick;
const CONNECTIONS = 50;
const WARMUP_S = QUICK ? 1 : 2;
/** Once, before the first measurement. */
const SERVICE_WARMUP_S = QUICK ? 2 : 6;
/** Each scenario: a warm-up, then ROUNDS rounds of ROUND_S seconds, each followed by a baseline round. */
const ROUNDS = QUICK ? 2 : 4;
const ROUND_S = QUICK ? 1.5 : 2.5;
const PETS = 1_000_000;
const DEEP_AFTER_ID = 900_000;
const SOAK_ACCOUNTS = 10_000;
const SOAK_WARMUP_S = QUICK ? 3 : 10;
const SOAK_S = QUICK ? 10 : 60;
const PG_PETS = 10_000;
const PEAK_RSS_LIMIT_MB = 200;
const SOAK_FLAT_PERCENT = 10;
const DEPTH_COST_LIMIT = 1.5;

const SCENARIOS = ['list20', 'reference', 'list100', 'get', 'post', 'depth', 'soak', 'postgres'] as const;
type ScenarioName = (typeof SCENARIOS)[number];
const only = opts.only ? new Set(opts.only.split(',').map((s) => s.trim())) : undefined;
if (only) {
  for (const name of only) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      process.stderr.write(`bench: unknown scenario "${name}"; known: ${SCENARIOS.join(', ')}\n`);
      process.exit(2);
    }
  }
}
const wanted = (name: ScenarioName): boolean =>
  (!only || only.has(name)) && !(name === 'postgres' && opts['no-postgres']);

// ---------------------------------------------------------------------------------------------- helpers

const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

type Env = Record<string, string | undefined>;

async function cli(env: Env, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [CLI, ...args], {
      env,
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`pet-adoption ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`);
  }
}

interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
}

const children = new Set<Child>();

function startChild(name: string, args: string[], env: Env, logFile: string): Child {
  const fd = openSync(logFile, 'a');
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (proc.pid === undefined) throw new Error(`could not start ${name}`);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const child: Child = { name, process: proc, pid: proc.pid, exited };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

async function stopChild(child: Child, graceMs = 15_000): Promise<void> {
  if (!children.has(child)) return;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

function killChildrenNow(): void {
  for (const child of children) child.process.kill('SIGKILL');
}
process.on('exit', killChildrenNow);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killChildrenNow();
    process.exit(130);
  });
}

async function waitForHttp(url: string, child: Child, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void child.exited.then((code) => (exitCode = code));
  while (Date.now() < deadline) {
    if (exitCode !== undefined)
      throw new Error(`${child.name} exited with code ${exitCode} before answering`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms`);
}

// ---------------------------------------------------------------------------------------------- memory

interface MemorySample {
  t: number;
  rssKb: number;
}

/** Samples VmRSS of one process every 250 ms; VmHWM (the kernel's own peak) is read on demand. */
class MemoryWatch {
  readonly samples: MemorySample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 250);
    this.timer.unref();
  }

  private status(): Record<string, number> {
    const out: Record<string, number> = {};
    try {
      for (const line of readFileSync(`/proc/${this.pid}/status`, 'utf8').split('\n')) {
        const m = /^(Vm\w+):\s+(\d+) kB/.exec(line);
        if (m) out[m[1]!] = Number(m[2]);
      }
    } catch {
      // process gone
    }
    return out;
  }

  sample(): number | undefined {
    const rss = this.status().VmRSS;
    if (rss !== undefined) this.samples.push({ t: Date.now(), rssKb: rss });
    return rss;
  }

  /** Peak resident set in MB: the kernel's high-water mark, or the largest sample if that is unavailable. */
  peakMb(): number {
    const hwm = this.status().VmHWM;
    const sampled = Math.max(0, ...this.samples.map((s) => s.rssKb));
    return Math.max(hwm ?? 0, sampled) / 1024;
  }

  /** Mean RSS (MB) of the samples taken in [from, to]. */
  meanMb(from: number, to: number): number {
    const inWindow = this.samples.filter((s) => s.t >= from && s.t <= to);
    if (inWindow.length === 0) return (this.sample() ?? 0) / 1024;
    return inWindow.reduce((a, s) => a + s.rssKb, 0) / inWindow.length / 1024;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

// ---------------------------------------------------------------------------------------------- load

type Req = autocannon.Request;

interface LoadOptions {
  url: string;
  durationS: number;
  requests?: Req[];
  headers?: Record<string, string>;
  /** Give each connection its own slice of the requests (many distinct keys). */
  perClientRequests?: Req[][];
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface RunResult {
  rps: number;
  requests: number;
  non2xx: number;
  errors: number;
  durationS: number;
  /** Latencies (ms) of the 2xx responses, unsorted. */
  latencies: Float64Array;
  /** CPU seconds the server process used during the run. */
  cpuS?: number;
}

/** One autocannon run; latencies of 2xx responses are kept exactly (autocannon's histogram rounds to ms). */
function load(options: LoadOptions, pid?: number): Promise<RunResult> {
  return new Promise((resolveLoad, reject) => {
    let latencies = new Float64Array(1 << 16);
    let n = 0;
    let clientIndex = 0;
    const cpuBefore = pid === undefined ? undefined : cpuSeconds(pid);
    const instance = autocannon(
      {
        url: options.url,
        connections: CONNECTIONS,
        pipelining: 1,
        duration: options.durationS,
        headers: options.headers,
        requests: options.requests,
        setupClient: options.perClientRequests
          ? (client) =>
              client.setRequests(
                options.perClientRequests![clientIndex++ % options.perClientRequests!.length]!,
              )
          : undefined,
      },
      (error, result) => {
        if (error) return reject(error);
        const cpuAfter = pid === undefined ? undefined : cpuSeconds(pid);
        const ok = result['2xx'];
        resolveLoad({
          rps: ok / result.duration,
          requests: ok,
          non2xx: result.non2xx,
          errors: result.errors,
          durationS: result.duration,
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

const CLOCK_TICKS_PER_S = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

/** utime + stime of a process (all its threads) in seconds, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** A load target: what to request, and the server process whose CPU time is charged. */
interface Target {
  label: string;
  pid: number;
  load: Omit<LoadOptions, 'durationS'>;
}

interface Measured {
  label: string;
  /** Median over the rounds. */
  rps: number;
  /** Median over the rounds of (scenario req/s ÷ mean of the baseline rounds either side). */
  ratio: number;
  ratios: number[];
  roundsRps: number[];
  /** Over every 2xx response of every round. */
  p50: number;
  p99: number;
  /** Server CPU time per 2xx response, µs: barely affected by who else uses the machine. */
  cpuUs?: number;
  non2xx: number;
  errors: number;
}

function summarise(label: string, runs: RunResult[], ratios: number[]): Measured {
  const total = runs.reduce((a, r) => a + r.latencies.length, 0);
  const all = new Float64Array(total);
  let offset = 0;
  for (const r of runs) {
    all.set(r.latencies, offset);
    offset += r.latencies.length;
  }
  all.sort();
  const requests = runs.reduce((a, r) => a + r.requests, 0);
  const cpu = runs.every((r) => r.cpuS !== undefined) ? runs.reduce((a, r) => a + r.cpuS!, 0) : undefined;
  return {
    label,
    rps: median(runs.map((r) => r.rps)),
    ratio: ratios.length ? median(ratios) : 1,
    ratios,
    roundsRps: runs.map((r) => r.rps),
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    cpuUs: cpu !== undefined && requests > 0 ? (cpu * 1e6) / requests : undefined,
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}

/**
 * Measures scenarios interleaved with the baseline: after a warm-up, ROUNDS × (scenario, baseline), each
 * scenario round compared with the baseline rounds just before and after it. A burst of load from
 * elsewhere on the machine then spoils one round's ratio, not the scenario's median.
 */
class Interleaved {
  readonly baselineRuns: RunResult[] = [];

  constructor(private readonly baseline: Target) {}

  private async baselineRound(): Promise<RunResult> {
    const run = await load({ ...this.baseline.load, durationS: ROUND_S }, this.baseline.pid);
    this.baselineRuns.push(run);
    return run;
  }

  async measure(target: Target): Promise<Measured> {
    if (this.baselineRuns.length === 0) {
      await load({ ...this.baseline.load, durationS: WARMUP_S });
      await this.baselineRound();
    }
    await load({ ...target.load, durationS: WARMUP_S });
    const runs: RunResult[] = [];
    const ratios: number[] = [];
    let before = this.baselineRuns[this.baselineRuns.length - 1]!.rps;
    for (let round = 0; round < ROUNDS; round++) {
      const run = await load({ ...target.load, durationS: ROUND_S }, target.pid);
      const after = (await this.baselineRound()).rps;
      runs.push(run);
      ratios.push(run.rps / ((before + after) / 2));
      before = after;
    }
    const m = summarise(target.label, runs, ratios);
    const cpu = m.cpuUs === undefined ? '' : `  cpu ${m.cpuUs.toFixed(0)} µs/req`;
    const problems = m.non2xx || m.errors ? `  (!) ${m.non2xx} non-2xx, ${m.errors} errors` : '';
    log(
      `${target.label.padEnd(44)} ${m.rps.toFixed(0).padStart(6)} req/s  ratio ${m.ratio.toFixed(2)} ` +
        `[${ratios.map((r) => r.toFixed(2)).join(' ')}]  p50 ${m.p50.toFixed(2)}  p99 ${m.p99.toFixed(2)} ms${cpu}${problems}`,
    );
    return m;
  }

  summary(): Measured {
    return summarise('baseline', this.baselineRuns, []);
  }
}

// ---------------------------------------------------------------------------------------------- results

interface Row {
  scenario: string;
  rps?: number;
  ratio?: number;
  /** Per-round ratios (each against the baseline rounds either side). */
  ratios?: number[];
  p50?: number;
  p99?: number;
  /** Server CPU time per response (µs): a noise-resistant cost figure, since it does not depend on who else runs. */
  cpuUs?: number;
  value?: string;
  target: string;
  pass?: boolean;
  note?: string;
}

const rows: Row[] = [];

function addLoadRow(m: Measured, target: string, minRatio?: number, maxP99?: number): Row {
  const row: Row = {
    scenario: m.label,
    rps: m.rps,
    ratio: m.ratio,
    ratios: m.ratios,
    p50: m.p50,
    p99: m.p99,
    cpuUs: m.cpuUs,
    target,
  };
  const failed = m.non2xx > 0 || m.errors > 0;
  if (failed) row.note = `${m.non2xx} non-2xx responses, ${m.errors} errors`;
  if (minRatio !== undefined || maxP99 !== undefined) {
    row.pass =
      !failed && (minRatio === undefined || m.ratio >= minRatio) && (maxP99 === undefined || m.p99 <= maxP99);
  }
  rows.push(row);
  return row;
}

// ---------------------------------------------------------------------------------------------- setup

interface Service {
  child: Child;
  base: string;
  memory: MemoryWatch;
}

async function startService(name: string, env: Env, logFile: string): Promise<Service> {
  const port = await freePort();
  const profileArgs = opts.profile ? ['--cpu-prof', '--cpu-prof-dir', join(BENCH_DIR, 'profiles')] : [];
  const child = startChild(
    name,
    [...profileArgs, CLI, 'serve'],
    { ...env, PORT: String(port), HOST: '127.0.0.1' },
    logFile,
  );
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/healthz`, child);
  return { child, base, memory: new MemoryWatch(child.pid) };
}

async function createKey(env: Env, account: string): Promise<string> {
  const out = await cli(
    env,
    'keys',
    'create',
    '--account',
    account,
    '--plan',
    'enterprise',
    '--per-minute',
    '1000000000',
    '--per-day',
    '1000000000',
    '--json',
  );
  const lines = out.trim().split('\n');
  return (JSON.parse(lines[lines.length - 1]!) as { key: string }).key;
}

/** Creates many accounts with one key each straight through the storage API (10,000 CLI runs would take minutes). */
async function createSoakAccounts(dbPath: string, count: number): Promise<string[]> {
  const storage = new SqliteDatabase(dbPath);
  const keys: string[] = [];
  try {
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const account = await storage
        .repository(accountRepository)
        .upsertAccount(
          { name: `soak-${i}`, plan: 'enterprise', perMinute: 1_000_000_000, perDay: 1_000_000_000 },
          now,
        );
      const key = generateApiKey();
      await storage
        .repository(accountRepository)
        .createKey(
          account.id,
          { id: generateKeyId(), hash: hashApiKey(key), hint: keyHint(key), expiresAt: null },
          now,
        );
      keys.push(key);
    }
  } finally {
    await storage.close();
  }
  return keys;
}

/** V8 heap and external memory (MB) as the service's own /metrics reports them. */
async function heapFigures(base: string): Promise<Record<string, number>> {
  const wanted: Record<string, string> = {
    nodejs_heap_size_used_bytes: 'heapUsed',
    nodejs_heap_size_total_bytes: 'heapTotal',
    nodejs_external_memory_bytes: 'external',
    process_resident_memory_bytes: 'rss',
  };
  const out: Record<string, number> = {};
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const line of text.split('\n')) {
      const [name, value] = line.split(' ');
      const label = name ? wanted[name] : undefined;
      if (label && value) out[label] = Math.round(Number(value) / 1e5) / 10;
    }
  } catch {
    // metrics are a bonus here
  }
  return out;
}

function encodeCursor(lastId: number): string {
  // Same encoding as src/routes/pets.ts; checked against a cursor the service issues before use.
  return Buffer.from(`id:${lastId}`).toString('base64url');
}

async function recordResponse(url: string, key: string): Promise<RecordedResponse> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.toString()}`);
  const skip = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
  const headers: [string, string][] = [];
  res.headers.forEach((value, name) => {
    if (!skip.has(name)) headers.push([name, value]);
  });
  return { status: res.status, headers, body: body.toString('base64') };
}

// ---------------------------------------------------------------------------------------------- postgres

interface PgTarget {
  databaseUrl: string;
  adminUrl: string;
  schema: string;
  redisUrl: string;
  redisPrefix: string;
}

async function postgresSkipReason(target: PgTarget): Promise<string | undefined> {
  const source = readFileSync(join(ROOT, 'src', 'db', 'postgres.ts'), 'utf8');
  const built = join(ROOT, 'dist', 'db', 'postgres.js');
  if (
    /not implemented yet/i.test(source) ||
    (existsSync(built) && /not implemented yet/i.test(readFileSync(built, 'utf8')))
  ) {
    return 'src/db/postgres.ts is still a placeholder';
  }
  const redisSource = readFileSync(join(ROOT, 'src', 'ratelimit', 'redis.ts'), 'utf8');
  if (/not implemented yet/i.test(redisSource)) return 'src/ratelimit/redis.ts is still a placeholder';
  try {
    const pg = await import('pg');
    const client = new pg.default.Client({
      connectionString: target.adminUrl,
      connectionTimeoutMillis: 2000,
    });
    await client.connect();
    await client.query('SELECT 1');
    await client.end();
  } catch (error) {
    return `PostgreSQL unreachable at ${target.adminUrl}: ${(error as Error).message}`;
  }
  try {
    const { Redis } = await import('ioredis');
    const redis = new Redis(target.redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
    });
    await redis.connect();
    await redis.ping();
    redis.disconnect();
  } catch (error) {
    return `Redis unreachable at ${target.redisUrl}: ${(error as Error).message}`;
  }
  return undefined;
}

async function dropPostgres(target: PgTarget): Promise<void> {
  try {
    const pg = await import('pg');
    const client = new pg.default.Client({
      connectionString: target.adminUrl,
      connectionTimeoutMillis: 2000,
    });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${target.schema}" CASCADE`);
    await client.end();
  } catch (error) {
    log(`could not drop schema ${target.schema}: ${(error as Error).message}`);
  }
  try {
    const { Redis } = await import('ioredis');
    const redis = new Redis(target.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${target.redisPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  } catch (error) {
    log(`could not delete Redis keys ${target.redisPrefix}*: ${(error as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------- main

const LOG_KEEP_HEAD = 64 * 1024;
const LOG_KEEP_TAIL = 8 * 1024 * 1024;

/**
 * A full run writes a few hundred MB of access log; keep its start (start-up lines) and end so the file
 * still shows what the service logged, without filling the disk run after run. Returns the size written.
 */
function trimLog(file: string): number {
  if (!existsSync(file)) return 0;
  const size = statSync(file).size;
  if (size <= LOG_KEEP_HEAD + LOG_KEEP_TAIL) return size;
  const fd = openSync(file, 'r');
  const head = Buffer.alloc(LOG_KEEP_HEAD);
  const tail = Buffer.alloc(LOG_KEEP_TAIL);
  readSync(fd, head, 0, LOG_KEEP_HEAD, 0);
  readSync(fd, tail, 0, LOG_KEEP_TAIL, size - LOG_KEEP_TAIL);
  closeSync(fd);
  const headText = head.toString('utf8', 0, head.lastIndexOf(10) + 1);
  const tailText = tail.toString('utf8', tail.indexOf(10) + 1);
  const removed = size - Buffer.byteLength(headText) - Buffer.byteLength(tailText);
  writeFileSync(file, `${headText}[bench] … ${removed} bytes of per-request lines removed …\n${tailText}`);
  return size;
}

function fmt(n: number | undefined, digits = 0): string {
  return n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits);
}

function printTable(): string {
  const header = ['scenario', 'req/s', 'ratio', 'p50 ms', 'p99 ms', 'cpu µs/req', 'target', 'result'];
  const body = rows.map((r) => [
    r.scenario,
    r.value ?? fmt(r.rps),
    fmt(r.ratio, 2),
    fmt(r.p50, 2),
    fmt(r.p99, 2),
    fmt(r.cpuUs),
    r.target,
    r.pass === undefined
      ? r.note?.startsWith('skipped')
        ? 'skipped'
        : r.target === '—'
          ? ''
          : 'report'
      : r.pass
        ? 'PASS'
        : 'FAIL',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 || i === 6 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const out = [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.scenario}: ${r.note}`);
  return [...out, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` (npm run bench does)');
  const started = Date.now();
  const tmp = mkdtempSync(join(tmpdir(), 'pet-adoption-bench-'));
  const dbPath = join(tmp, 'bench.db');
  const serviceLog = join(BENCH_DIR, 'service.log');
  const baselineLog = join(BENCH_DIR, 'baseline.log');
  const stackLog = join(BENCH_DIR, 'stack.log');
  for (const f of [serviceLog, baselineLog, join(BENCH_DIR, 'service-postgres.log')]) writeFileSync(f, '');
  if (opts.profile) mkdirSync(join(BENCH_DIR, 'profiles'), { recursive: true });

  const env: Env = { ...process.env, DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info' };
  delete env.REDIS_URL;
  delete env.NODE_OPTIONS;

  let service: Service | undefined;
  let baselineChild: Child | undefined;
  let bench: Interleaved | undefined;
  const memory: Record<string, unknown> = {};
  try {
    // --- data: one enterprise account for the scenarios, 1,000,000 pets, 10,000 soak accounts
    log(`setting up ${dbPath}`);
    const key = await createKey(env, 'bench');
    let t = Date.now();
    await cli(env, 'seed', '--pets', String(PETS));
    log(`seeded ${PETS} pets in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    let soakKeys: string[] = [];
    if (wanted('soak')) {
      t = Date.now();
      soakKeys = await createSoakAccounts(dbPath, SOAK_ACCOUNTS);
      log(`created ${SOAK_ACCOUNTS} accounts with one key each in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }

    // --- the service, as `npm start` runs it, and the baseline replaying one of its real responses
    service = await startService('service', env, serviceLog);
    const auth = { authorization: `Bearer ${key}` };
    const listUrl = `${service.base}/v1/pets?limit=20`;
    const recorded = await recordResponse(listUrl, key);
    const recordedFile = join(tmp, 'recorded.json');
    writeFileSync(recordedFile, JSON.stringify(recorded));
    const baselinePort = await freePort();
    baselineChild = startChild(
      'baseline',
      ['--import', 'tsx', join(BENCH_DIR, 'baseline-server.ts'), recordedFile, String(baselinePort)],
      env,
      baselineLog,
    );
    const baselineUrl = `http://127.0.0.1:${baselinePort}/v1/pets?limit=20`;
    await waitForHttp(baselineUrl, baselineChild);
    log(
      `service ${service.base} (pid ${service.child.pid}), baseline 127.0.0.1:${baselinePort}; ` +
        `${CONNECTIONS} connections; per scenario ${WARMUP_S} s warm-up, then ${ROUNDS} × (${ROUND_S} s scenario + ${ROUND_S} s baseline)`,
    );
    bench = new Interleaved({
      label: 'baseline',
      pid: baselineChild.pid,
      load: { url: baselineUrl },
    });
    const on = (label: string, load: Target['load']): Target => ({ label, pid: service!.child.pid, load });

    // JIT, heap sizing and caches settle before anything is measured.
    log(`warming the service up for ${SERVICE_WARMUP_S} s`);
    await load({ url: listUrl, headers: auth, durationS: SERVICE_WARMUP_S / 2 });
    await load({ url: `${service.base}/v1/pets/1`, headers: auth, durationS: SERVICE_WARMUP_S / 2 });

    if (wanted('list20') || wanted('depth')) {
      const first = await bench.measure(on('GET /v1/pets?limit=20', { url: listUrl, headers: auth }));
      addLoadRow(first, '≥ 0.35, p99 ≤ 10 ms', 0.35, 10);
      if (wanted('depth')) {
        const cursor = encodeCursor(DEEP_AFTER_ID);
        const deepUrl = `${service.base}/v1/pets?limit=20&cursor=${cursor}`;
        const check = await fetch(deepUrl, { headers: auth });
        const page = (await check.json()) as { id: number }[];
        if (check.status !== 200 || page[0]?.id !== DEEP_AFTER_ID + 1) {
          throw new Error(`deep page check failed: ${check.status} ${JSON.stringify(page).slice(0, 200)}`);
        }
        const deep = await bench.measure(
          on(`GET /v1/pets?limit=20&cursor=(after id ${DEEP_AFTER_ID})`, { url: deepUrl, headers: auth }),
        );
        addLoadRow(deep, 'report');
        // Both ratios are to the same baseline, so their quotient is the deep page's relative cost.
        const cost = first.ratio / deep.ratio;
        const latencyCost = deep.p50 / first.p50;
        rows.push({
          scenario: `depth: cost of the page ${DEEP_AFTER_ID.toLocaleString('en')} rows deep ÷ first page`,
          value: `${cost.toFixed(2)}×`,
          target: `≤ ${DEPTH_COST_LIMIT}× (${PETS.toLocaleString('en')} pets)`,
          pass: cost <= DEPTH_COST_LIMIT,
          note: `ratio to baseline first ${first.ratio.toFixed(2)} vs deep ${deep.ratio.toFixed(2)}; p50 latency ×${latencyCost.toFixed(2)}`,
        });
      }
    }

    if (wanted('reference')) {
      const interleaved = bench;
      /** Starts a reference server (not the service), measures it like a scenario, and stops it. */
      const measureReference = async (
        label: string,
        note: string,
        start: (port: number) => Child,
        paths: { ready: string; load: string },
        headers?: Record<string, string>,
      ): Promise<void> => {
        const port = await freePort();
        const child = start(port);
        try {
          await waitForHttp(`http://127.0.0.1:${port}${paths.ready}`, child);
          const url = `http://127.0.0.1:${port}${paths.load}`;
          addLoadRow(
            await interleaved.measure({ label, pid: child.pid, load: headers ? { url, headers } : { url } }),
            'report',
          );
          rows[rows.length - 1]!.note = note;
        } finally {
          await stopChild(child);
        }
      };
      const script = (name: string, ...args: string[]): string[] => [
        '--import',
        'tsx',
        join(BENCH_DIR, name),
        ...args,
      ];

      // The issue's yardstick: a minimal Fastify route reading 20 rows per request, no auth, limits or logs.
      await measureReference(
        'reference: minimal Fastify + SQLite, 20 rows',
        'no auth, rate limiting, logging, metrics or validation (bench/minimal-server.ts)',
        (port) =>
          startChild(
            'minimal reference',
            script('minimal-server.ts', dbPath, String(port)),
            env,
            baselineLog,
          ),
        { ready: '/v1/pets', load: '/v1/pets' },
      );
      // Where the rest of the service's cost goes: the framework alone (same bytes, no work), then the whole
      // service with the page query taken out (storage answers from memory; everything else is real).
      await measureReference(
        'reference: bare Fastify route, same bytes',
        'what the framework costs (bench/floor-server.ts)',
        (port) =>
          startChild(
            'fastify floor',
            script('floor-server.ts', recordedFile, String(port)),
            env,
            baselineLog,
          ),
        { ready: '/v1/pets', load: '/v1/pets?limit=20' },
      );
      await measureReference(
        'reference: the service, page served from memory',
        'the whole service minus the page query: the ceiling for any storage work (bench/stack-server.ts)',
        (port) =>
          startChild(
            'service stack',
            script('stack-server.ts'),
            { ...env, PORT: String(port), HOST: '127.0.0.1' },
            stackLog,
          ),
        { ready: '/healthz', load: '/v1/pets?limit=20' },
        auth,
      );
      writeFileSync(stackLog, '');
    }

    if (wanted('list100')) {
      const url = `${service.base}/v1/pets?status=available&limit=100`;
      addLoadRow(
        await bench.measure(on('GET /v1/pets?status=available&limit=100', { url, headers: auth })),
        'report',
      );
    }

    if (wanted('get')) {
      // 1,000 fixed ids spread over the table, so lookups do not all hit the same page.
      const requests: Req[] = Array.from({ length: 1000 }, (_, i) => ({
        method: 'GET',
        path: `/v1/pets/${1 + ((i * 7919 + 13) % PETS)}`,
      }));
      const m = await bench.measure(on('GET /v1/pets/{id}', { url: service.base, headers: auth, requests }));
      addLoadRow(m, '≥ 0.40', 0.4);
    }

    if (wanted('post')) {
      const body = JSON.stringify({ name: 'Bench pet', categoryId: 3 });
      const m = await bench.measure(
        on('POST /v1/pets', {
          url: service.base,
          headers: { ...auth, 'content-type': 'application/json' },
          requests: [{ method: 'POST', path: '/v1/pets', body }],
        }),
      );
      addLoadRow(m, '≥ 0.15', 0.15);
    }

    if (wanted('soak')) {
      // Each connection cycles through its own 200 of the 10,000 accounts' keys (prebuilt requests).
      const perClient = Math.ceil(soakKeys.length / CONNECTIONS);
      const perClientRequests: Req[][] = [];
      for (let c = 0; c < CONNECTIONS; c++) {
        perClientRequests.push(
          soakKeys.slice(c * perClient, (c + 1) * perClient).map((k) => ({
            method: 'GET',
            path: '/v1/pets?limit=20',
            headers: { authorization: `Bearer ${k}` },
          })),
        );
      }
      const url = service.base;
      log(`soak: ${soakKeys.length} accounts, ${SOAK_WARMUP_S} s warm-up then ${SOAK_S} s`);
      const w = await load({ url, durationS: SOAK_WARMUP_S, perClientRequests });
      const warmEnd = Date.now();
      const heapStart = await heapFigures(service.base);
      const s = summarise(
        'soak',
        [await load({ url, durationS: SOAK_S, perClientRequests }, service.child.pid)],
        [],
      );
      const soakEnd = Date.now();
      const heapEnd = await heapFigures(service.base);
      const startMb = service.memory.meanMb(warmEnd - 2000, warmEnd);
      const endMb = service.memory.meanMb(soakEnd - 2000, soakEnd);
      const drift = (100 * (endMb - startMb)) / startMb;
      const sign = drift >= 0 ? '+' : '';
      log(
        `soak: ${s.rps.toFixed(0)} req/s, p99 ${s.p99.toFixed(2)} ms, RSS ${startMb.toFixed(1)} → ${endMb.toFixed(1)} MB (${sign}${drift.toFixed(1)} %)`,
      );
      const bad = w.non2xx + w.errors + s.non2xx + s.errors;
      rows.push({
        scenario: `memory: RSS across a ${SOAK_S} s soak, ${soakKeys.length.toLocaleString('en')} accounts`,
        p50: s.p50,
        p99: s.p99,
        cpuUs: s.cpuUs,
        value: `${startMb.toFixed(0)}→${endMb.toFixed(0)} MB (${sign}${drift.toFixed(1)} %)`,
        target: `±${SOAK_FLAT_PERCENT} %`,
        pass: Math.abs(drift) <= SOAK_FLAT_PERCENT && bad === 0,
        note: `${s.rps.toFixed(0)} req/s of GET /v1/pets?limit=20 spread over the accounts${bad ? `; ${bad} non-2xx/errors` : ''}`,
      });
      log(`soak: heap (from /metrics) ${JSON.stringify(heapStart)} → ${JSON.stringify(heapEnd)}`);
      Object.assign(memory, { soakHeapStartMb: heapStart, soakHeapEndMb: heapEnd });
      Object.assign(memory, {
        soakStartMb: startMb,
        soakEndMb: endMb,
        soakDriftPercent: drift,
        soakRps: s.rps,
      });
    }

    const peakMb = service.memory.peakMb();
    rows.push({
      scenario: 'memory: peak RSS of the service over the run',
      value: `${peakMb.toFixed(0)} MB`,
      target: `≤ ${PEAK_RSS_LIMIT_MB} MB`,
      pass: peakMb <= PEAK_RSS_LIMIT_MB,
    });
    // One RSS sample per second over the whole run, for looking at the shape (GC sawtooth or growth).
    const t0 = service.memory.samples[0]?.t ?? 0;
    const perSecond = new Map<number, number>();
    for (const sample of service.memory.samples)
      perSecond.set(Math.floor((sample.t - t0) / 1000), sample.rssKb);
    Object.assign(memory, {
      peakMb,
      rssMbPerSecond: [...perSecond.values()].map((kb) => Math.round(kb / 102.4) / 10),
    });
    service.memory.stop();
    await stopChild(service.child);
    service = undefined;

    // --- the same list on PostgreSQL + Redis
    if (wanted('postgres')) {
      const unique = `bench_${process.pid}_${randomBytes(4).toString('hex')}`;
      const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
      const target: PgTarget = {
        adminUrl,
        schema: unique,
        databaseUrl: `${adminUrl}?schema=${unique}`,
        redisUrl: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
        redisPrefix: `${unique}:`,
      };
      const reason = await postgresSkipReason(target);
      const label = 'GET /v1/pets?limit=20 on PostgreSQL + Redis';
      if (reason) {
        log(`skipping PostgreSQL + Redis: ${reason}`);
        rows.push({ scenario: label, target: '≥ 0.12', note: `skipped: ${reason}` });
      } else {
        const pgEnv: Env = {
          ...env,
          DATABASE_URL: target.databaseUrl,
          REDIS_URL: target.redisUrl,
          REDIS_PREFIX: target.redisPrefix,
        };
        let pgService: Service | undefined;
        try {
          const pgKey = await createKey(pgEnv, 'bench');
          await cli(pgEnv, 'seed', '--pets', String(PG_PETS));
          pgService = await startService(
            'service (postgres)',
            pgEnv,
            join(BENCH_DIR, 'service-postgres.log'),
          );
          const m = await bench.measure({
            label,
            pid: pgService.child.pid,
            load: {
              url: `${pgService.base}/v1/pets?limit=20`,
              headers: { authorization: `Bearer ${pgKey}` },
            },
          });
          const row = addLoadRow(m, '≥ 0.12', 0.12);
          row.note = `${row.note ? `${row.note}; ` : ''}peak RSS ${pgService.memory.peakMb().toFixed(0)} MB`;
          pgService.memory.stop();
          await stopChild(pgService.child);
          pgService = undefined;
        } catch (error) {
          log(`PostgreSQL + Redis run failed: ${(error as Error).message}`);
          rows.push({
            scenario: label,
            target: '≥ 0.12',
            pass: false,
            note: `failed: ${(error as Error).message}`,
          });
        } finally {
          if (pgService) await stopChild(pgService.child);
          trimLog(join(BENCH_DIR, 'service-postgres.log'));
          await dropPostgres(target);
        }
      }
    }
  } finally {
    if (service) await stopChild(service.child);
    if (baselineChild) await stopChild(baselineChild);
    rmSync(tmp, { recursive: true, force: true });
  }

  const baselineRps = bench?.baselineRuns.map((r) => r.rps) ?? [];
  if (bench && baselineRps.length > 0) {
    const b = bench.summary();
    rows.unshift({
      scenario: `baseline: bare node:http, same bytes (${baselineRps.length} rounds)`,
      rps: b.rps,
      ratio: 1,
      p50: b.p50,
      p99: b.p99,
      cpuUs: b.cpuUs,
      target: '—',
    });
  }

  const table = printTable();
  const summary =
    `baseline rounds: ${baselineRps.map((r) => r.toFixed(0)).join(' ')} req/s ` +
    `(min..max spread ${((100 * (Math.max(...baselineRps) - Math.min(...baselineRps))) / Math.min(...baselineRps)).toFixed(0)} %).\n` +
    `ratio = median over ${ROUNDS} rounds of (scenario req/s ÷ mean of the baseline rounds either side); ` +
    `req/s = median round; p50/p99 over all rounds' responses; cpu = server CPU time per response.`;
  process.stdout.write(`\n${table}\n\n${summary}\n`);
  const logSize = trimLog(serviceLog);
  process.stdout.write(
    `service log: ${serviceLog} (${(logSize / 1e6).toFixed(0)} MB written, one info line per request; ` +
      `kept its start and last ${LOG_KEEP_TAIL / 2 ** 20} MiB)\n`,
  );

  const results = {
    date: new Date().toISOString(),
    quick: QUICK,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    settings: {
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_S,
      rounds: ROUNDS,
      roundSeconds: ROUND_S,
      pets: PETS,
      soakAccounts: SOAK_ACCOUNTS,
      soakSeconds: SOAK_S,
    },
    baselineRoundsRps: baselineRps,
    rows,
    memory,
    elapsedSeconds: Math.round((Date.now() - started) / 1000),
  };
  // Only a full run replaces bench/results.json; smoke and partial runs must not overwrite it.
  const resultsFile = QUICK || only || opts['no-postgres'] ? 'results.partial.json' : 'results.json';
  writeFileSync(join(BENCH_DIR, resultsFile), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`results written to bench/${resultsFile} (${results.elapsedSeconds} s)\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  killChildrenNow();
  process.exit(1);
});
