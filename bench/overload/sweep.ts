/**
 * The overload sweep (bench/scenarios/overload*.ts): wrk against one server, first 16 connections (the
 * baseline rate), then floods of 2,000 and 5,000 keep-alive connections, each followed by a 16-connection run
 * 2 s after it ends (recovery), while a liveness probe in a process of its own (probe.ts) opens a new
 * connection to GET /healthz every 250 ms with a 1 s timeout. wrk rather than autocannon: one C process
 * drives 5,000 connections on the 2 cores this machine has without becoming the bottleneck.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { cpuSeconds } from '../lib/cpu.js';
import type { MemoryWatch } from '../lib/memory.js';
import { Skip } from '../lib/scenario.js';
import { BENCH_DIR, scriptArgv } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import { answerGaps, logOffset, type AnswerGaps } from './answer-gaps.js';

export const FLOODS = [2000, 5000] as const;
/** Enough descriptors for the largest flood on both ends, plus the server's own files. */
const NOFILE_NEEDED = 5000 + 1000;

export interface WrkResult {
  connections: number;
  durationS: number;
  /** Every answer, and by kind: 2xx other than 201, 201 (created), 503, anything else. */
  requests: number;
  ok: number;
  created: number;
  refused: number;
  other: number;
  /** Socket errors as wrk counts them; `timeout`: requests with no answer within wrk's --timeout (10 s). */
  connect: number;
  read: number;
  write: number;
  timeout: number;
  /** Over every answer (ms). */
  p50: number;
  p99: number;
  max: number;
  /** 2xx answers per second. */
  rps2xx: number;
  /** Server CPU µs per answer (any status). */
  cpuUs?: number;
}

/** wrk must be installed; the process limits must allow the largest flood. Otherwise the scenario is skipped. */
export function checkPrerequisites(): void {
  const found = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (found.error) {
    throw new Skip(
      'wrk is not installed: `sudo apt-get install -y wrk` (Debian/Ubuntu), `brew install wrk` (macOS)',
    );
  }
  const hard = Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim());
  const soft = Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim());
  // The servers are this process's children and inherit its soft limit; wrk raises its own to the hard one.
  if (Number.isFinite(soft) && soft < NOFILE_NEEDED) {
    throw new Skip(
      `open-file limit ${soft} < ${NOFILE_NEEDED}: run \`ulimit -n ${Math.min(hard, 20000)}\` (hard limit ${hard}) before npm run bench`,
    );
  }
}

export interface WrkOptions {
  origin: string;
  pid: number;
  auth?: string;
  /** Ids of created pets are written to <idsFile>.<thread>. */
  idsFile?: string;
}

export async function wrk(options: WrkOptions, connections: number, durationS: number): Promise<WrkResult> {
  const args = [
    ...['-t', '2', '-c', String(connections), '-d', `${durationS}s`, '--timeout', '10s'],
    ...['-s', join(BENCH_DIR, 'overload', 'mix.lua'), options.origin],
  ];
  const env = {
    ...process.env,
    WRK_AUTH: options.auth ?? '',
    ...(options.idsFile ? { WRK_IDS: options.idsFile } : {}),
  };
  const cpuBefore = cpuSeconds(options.pid);
  const out = await new Promise<string>((resolve, reject) => {
    // Raise wrk's descriptor limit to the hard limit: 5,000 connections need more than the usual 1,024.
    const child = spawn(
      'sh',
      ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec wrk "$@"', 'wrk', ...args],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`wrk exited ${code}: ${stderr.trim()}`)),
    );
  });
  const cpuAfter = cpuSeconds(options.pid);
  const line = out.split('\n').find((l) => l.startsWith('WRKJSON '));
  if (!line) throw new Error(`wrk printed no summary:\n${out}`);
  const raw = JSON.parse(line.slice('WRKJSON '.length)) as Record<string, number>;
  const seconds = raw.durationUs! / 1e6;
  const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  return {
    connections,
    durationS: seconds,
    requests: raw.requests!,
    ok: raw.ok!,
    created: raw.created!,
    refused: raw.refused!,
    other: raw.other!,
    connect: raw.connect!,
    read: raw.read!,
    write: raw.write!,
    timeout: raw.timeout!,
    p50: raw.p50! / 1000,
    p99: raw.p99! / 1000,
    max: raw.max! / 1000,
    rps2xx: (raw.ok! + raw.created!) / seconds,
    cpuUs: cpu === undefined || raw.requests === 0 ? undefined : (cpu * 1e6) / raw.requests!,
  };
}

export interface ProbeSummary {
  count: number;
  /** Probes not answered 200 within the timeout. */
  failed: number;
  /** When each failed probe was sent (ms after the first). */
  failedAt: number[];
  p50: number;
  max: number;
}

interface Sent {
  at: number;
  ms: number;
  status: number;
}

/** probe.ts in a process of its own; `stop()` ends it and returns what it sent. */
async function startProbeProcess(args: string[]): Promise<{ stop(): Promise<Sent[]> }> {
  const child = spawn(process.execPath, scriptArgv('overload/probe.ts', ...args), {
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => c.toString().includes('probe running') && resolve());
    child.on('exit', (code) => reject(new Error(`probe exited ${code} before starting`)));
  });
  return {
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      return (JSON.parse(stdout.trim()) as { probes: Sent[] }).probes;
    },
  };
}

/** The upper median, as the probe has always reported it (NaN when empty). */
const median = (values: number[]): number =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
/** NaN when empty, like the median (Math.max of nothing is -Infinity). */
const maxOf = (values: number[]): number => (values.length ? Math.max(...values) : NaN);

/** Starts the liveness probe process; `stop()` ends it and summarises its probes. */
async function startProbe(origin: string): Promise<{ stop(): Promise<ProbeSummary> }> {
  const child = await startProbeProcess([origin, '250', '1000']);
  return {
    async stop() {
      const probes = await child.stop();
      const failures = probes.filter((p) => p.status !== 200 || p.ms > 1000);
      return {
        count: probes.length,
        failed: failures.length,
        failedAt: failures.map((p) => p.at),
        p50: median(probes.map((p) => p.ms)),
        max: maxOf(probes.map((p) => p.ms)),
      };
    },
  };
}

export interface PoliteSummary {
  /** Requests sent (a new connection each), and of them refused with 503. */
  count: number;
  refused: number;
  /** Time to the 503 (ms); NaN when none was refused. */
  refusedP50: number;
  refusedMax: number;
  /** Time to a 2xx (ms). */
  answeredP50: number;
  answeredMax: number;
  /** Neither 2xx nor 503 within 5 s. */
  failed: number;
}

/**
 * A polite API client beside the flood: GET /v1/pets?limit=20 on a new connection every 250 ms, nothing sent
 * while a 503's Retry-After runs. What it should see is a quick answer or a quick refusal.
 */
async function startPolite(
  origin: string,
  authorization: string,
): Promise<{ stop(): Promise<PoliteSummary> }> {
  const child = await startProbeProcess([origin, '250', '5000', '/v1/pets?limit=20', authorization]);
  return {
    async stop() {
      const sent = await child.stop();
      const refused = sent.filter((p) => p.status === 503).map((p) => p.ms);
      const answered = sent.filter((p) => p.status >= 200 && p.status < 300).map((p) => p.ms);
      return {
        count: sent.length,
        refused: refused.length,
        refusedP50: median(refused),
        refusedMax: maxOf(refused),
        answeredP50: median(answered),
        answeredMax: maxOf(answered),
        failed: sent.length - refused.length - answered.length,
      };
    },
  };
}

export interface FloodFigures {
  connections: number;
  flood: WrkResult;
  /** 2xx rate under the flood ÷ the 16-connection rate. */
  share: number;
  probes: ProbeSummary;
  /** A polite API client's answers during the flood (when the target takes a key). */
  polite?: PoliteSummary;
  /** Highest RSS sampled during the flood. */
  rssPeakMb: number;
  /** Latency after the flood's first RAMP_MS, from the service's request log (when the target has one). */
  afterRamp?: AnswerGaps;
  recovery: WrkResult;
  /** 16-connection 2xx rate 2 s after the flood ÷ the baseline rate. */
  recovered: number;
}

export interface SweepFigures {
  base: WrkResult;
  floods: FloodFigures[];
}

export interface SweepTiming {
  warmupS: number;
  baseS: number;
  floodS: number;
  recoveryS: number;
}

export function timing(quick: boolean): SweepTiming {
  return quick
    ? { warmupS: 2, baseS: 3, floodS: 5, recoveryS: 3 }
    : { warmupS: 3, baseS: 10, floodS: 20, recoveryS: 5 };
}

/** The flood's first part, while its connections arrive, left out of `afterRamp`. */
const RAMP_MS = 2500;

export async function sweep(
  target: WrkOptions & {
    memory: MemoryWatch;
    /** The service's request log (its stdout), for `afterRamp`. */
    logFile?: string;
  },
  t: SweepTiming,
  log: (line: string) => void,
  label: string,
): Promise<SweepFigures> {
  await wrk(target, 16, t.warmupS);
  const base = await wrk(target, 16, t.baseS);
  log(`${label}: 16 connections ${base.rps2xx.toFixed(0)} 2xx/s, p99 ${base.p99.toFixed(1)} ms`);
  const floods: FloodFigures[] = [];
  for (const connections of FLOODS) {
    // On the API port, as the orchestrator probes: HEALTH_PORT would only hide the API port's accept queue.
    const probe = await startProbe(target.origin);
    const politeClient = target.auth ? await startPolite(target.origin, target.auth) : undefined;
    const logStart = target.logFile === undefined ? 0 : logOffset(target.logFile);
    const from = Date.now();
    const flood = await wrk(target, connections, t.floodS);
    const to = Date.now();
    const probes = await probe.stop();
    const polite = await politeClient?.stop();
    const rssPeakMb =
      Math.max(0, ...target.memory.samples.filter((s) => s.t >= from && s.t <= to).map((s) => s.rssKb)) /
      1024;
    await delay(2000);
    const recovery = await wrk(target, 16, t.recoveryS);
    // Read once the recovery has run: the service writes its log lines asynchronously.
    const afterRamp =
      target.logFile === undefined
        ? undefined
        : await answerGaps(target.logFile, logStart, { fromMs: from, toMs: to, rampMs: RAMP_MS });
    const figures: FloodFigures = {
      connections,
      flood,
      share: flood.rps2xx / base.rps2xx,
      probes,
      polite,
      rssPeakMb,
      afterRamp,
      recovery,
      recovered: recovery.rps2xx / base.rps2xx,
    };
    floods.push(figures);
    const failedAt = probes.failed ? ` (sent at ${sentAt(probes.failedAt)} ms)` : '';
    log(
      `${label}: ${connections} connections: share ${figures.share.toFixed(2)} (${flood.rps2xx.toFixed(0)} 2xx/s, ` +
        `${flood.refused} refused of ${flood.requests}), p50/p99/max ${flood.p50.toFixed(0)}/${flood.p99.toFixed(0)}/` +
        `${flood.max.toFixed(0)} ms, ${describeAfterRamp(afterRamp)}timeouts ${flood.timeout}, socket errors ${flood.connect}/${flood.read}/${flood.write}, ` +
        `cpu ${flood.cpuUs?.toFixed(0)} µs/answer; probes ${probes.failed} of ${probes.count} failed${failedAt} ` +
        `(p50 ${probes.p50.toFixed(0)}, max ${probes.max.toFixed(0)} ms); ${describePolite(polite)}RSS peak ${rssPeakMb.toFixed(0)} MB; ` +
        `recovered ${figures.recovered.toFixed(2)}`,
    );
  }
  return { base, floods };
}

export function describeAfterRamp(gaps: AnswerGaps | undefined): string {
  if (!gaps) return '';
  return (
    `after the first ${RAMP_MS / 1000} s p50/p99/max ${gaps.p50.toFixed(0)}/${gaps.p99.toFixed(0)}/` +
    `${gaps.max.toFixed(0)} ms (${gaps.count} answer gaps in the service's log), `
  );
}

export function describePolite(polite: PoliteSummary | undefined): string {
  if (!polite) return '';
  return (
    `polite client ${polite.count} sent, ${polite.refused} refused (p50 ${polite.refusedP50.toFixed(0)}, max ` +
    `${polite.refusedMax.toFixed(0)} ms), answered p50 ${polite.answeredP50.toFixed(0)}, max ` +
    `${polite.answeredMax.toFixed(0)} ms, ${polite.failed} failed; `
  );
}

/** When the failed probes were sent: the first few, enough to tell a burst at the flood's start from a spread. */
function sentAt(times: number[]): string {
  return times.length > 6 ? `${times.slice(0, 6).join(', ')}, … ${times.at(-1)}` : times.join(', ');
}

/** The ids wrk saw acknowledged with 201 (its per-thread files), the files removed. */
export function acknowledgedIds(idsFile: string): number[] {
  const ids: number[] = [];
  for (let thread = 1; thread <= 2; thread++) {
    const file = `${idsFile}.${thread}`;
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) if (line) ids.push(Number(line));
    rmSync(file);
  }
  return ids;
}

/** Every pet id the service lists, following `Link: rel="next"`. */
export async function listedIds(origin: string, auth: string): Promise<Set<number>> {
  const ids = new Set<number>();
  let next: string | undefined = '/v1/pets?limit=100';
  while (next) {
    const res: Response = await fetch(`${origin}${next}`, { headers: { authorization: auth } });
    if (res.status !== 200) throw new Error(`GET ${next} answered ${res.status}`);
    for (const pet of (await res.json()) as { id: number }[]) ids.add(pet.id);
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return ids;
}
