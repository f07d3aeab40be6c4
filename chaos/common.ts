/**
 * What the chaos experiments share: the result rows, cleanup that runs even when an experiment fails,
 * server environments on each backend, peak-RSS sampling and a keep-alive HTTP client that tells a request
 * the server never received (refused) from one it received and left unanswered (reset, hang up).
 * Servers are the built CLI started through support/processes.ts; backends come from support/ too.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ChildProcess } from 'node:child_process';
import { PG_URL, REDIS_URL, uniqueName } from '../support/services.js';
import { cli } from '../support/processes.js';

export { PG_URL, REDIS_URL };

export interface Row {
  metric: string;
  figure: string;
  target: string;
  /** undefined: reported, no target. */
  met: boolean | undefined;
}

export interface ExperimentResult {
  name: string;
  rows: Row[];
  /** Raw numbers behind the rows, for results.json. */
  details: Record<string, unknown>;
  peakRssMb?: number;
  seconds?: number;
  error?: string;
}

export interface Settings {
  crashRounds: number;
  stops: number;
  malformedRequests: number;
  seed: number;
  /** Whether PostgreSQL and Redis answer; their parts are skipped (and say so) when not. */
  external: boolean;
}

/** Cleanup steps, run last-in first-out by the runner whatever happened. */
export class Cleanup {
  private readonly steps: Array<{ what: string; run: () => unknown }> = [];

  add(what: string, run: () => unknown): void {
    this.steps.push({ what, run });
  }

  async runAll(): Promise<void> {
    while (this.steps.length > 0) {
      const step = this.steps.pop()!;
      try {
        await step.run();
      } catch (error) {
        console.error(`chaos: cleanup "${step.what}" failed: ${(error as Error).message}`);
      }
    }
  }

  tempDir(label: string): string {
    const dir = mkdtempSync(join(tmpdir(), `pet-adoption-chaos-${label}-`));
    this.add(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** A fresh PostgreSQL schema name, dropped at the end. */
  async schema(label: string): Promise<string> {
    const { dropSchema } = await import('../support/postgres.js');
    const name = uniqueName(`chaos_${label}`);
    this.add(`drop schema ${name}`, () => dropSchema(name));
    return name;
  }

  /** A fresh Redis key prefix, its keys deleted at the end. */
  async redisPrefix(label: string): Promise<string> {
    const { deleteKeys } = await import('../support/redis.js');
    const prefix = `${uniqueName(`chaos_${label}`)}:`;
    this.add(`delete Redis keys ${prefix}*`, () => deleteKeys(REDIS_URL, prefix));
    return prefix;
  }
}

/** Environment for a server on a new SQLite file. */
export function sqliteEnv(
  cleanup: Cleanup,
  synchronous: 'normal' | 'full' = 'normal',
): Record<string, string> {
  const dir = cleanup.tempDir('sqlite');
  return { DATABASE_URL: `sqlite:${join(dir, 'chaos.db')}`, SQLITE_SYNCHRONOUS: synchronous };
}

/** Environment for a server on a new PostgreSQL schema (through `port` when a proxy stands in front). */
export async function postgresEnv(
  cleanup: Cleanup,
  label: string,
  port?: number,
): Promise<Record<string, string>> {
  const { postgresUrl } = await import('../support/postgres.js');
  const url = new URL(postgresUrl(await cleanup.schema(label)));
  if (port !== undefined) url.port = String(port);
  return { DATABASE_URL: url.toString() };
}

/** An enterprise key with the given quotas, made with the CLI (after `migrate`, which creates the database). */
export async function createKey(env: Record<string, string>, perMinute = 1_000_000_000): Promise<string> {
  const migrated = await cli(['migrate'], env);
  if (migrated.code !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  const account = uniqueName('acct');
  const result = await cli(
    [
      'keys',
      'create',
      '--account',
      account,
      '--plan',
      'enterprise',
      '--per-minute',
      String(perMinute),
    ].concat(['--per-day', '1000000000', '--json']),
    env,
  );
  if (result.code !== 0) throw new Error(`keys create failed: ${result.stderr}`);
  return (JSON.parse(result.stdout.trim()) as { key: string }).key;
}

/** Polls VmHWM (the kernel's own peak-RSS mark) of every watched process; cheap, and survives kill -9. */
export class PeakRss {
  private peakKb = 0;
  private readonly watched = new Set<ChildProcess>();
  private readonly timer = setInterval(() => this.sample(), 250).unref();

  watch(child: ChildProcess): void {
    this.watched.add(child);
    child.once('exit', () => this.watched.delete(child));
    this.sample();
  }

  /** Read it right before a kill, so nothing after the last poll is missed. */
  sample(): void {
    for (const child of this.watched) {
      try {
        const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (match) this.peakKb = Math.max(this.peakKb, Number(match[1]));
      } catch {
        // Gone already, or not Linux: no figure.
      }
    }
  }

  stop(): number | undefined {
    clearInterval(this.timer);
    this.sample();
    return this.peakKb > 0 ? Math.round(this.peakKb / 1024) : undefined;
  }
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  ms: number;
}

/** A request that got no HTTP answer. `sent`: the connection was accepted, so the server had the request. */
export class NoAnswer extends Error {
  constructor(
    readonly code: string,
    readonly sent: boolean,
    readonly reused: boolean,
  ) {
    super(code);
  }
}

/**
 * One request. With a keep-alive `agent`, sockets are reused as a real client reuses them. Rejects with
 * NoAnswer: code ECONNREFUSED and sent=false when nothing reached the server.
 */
export function request(
  base: string,
  method: string,
  path: string,
  options: { agent?: http.Agent; key?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Answer> {
  const url = new URL(base + path);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let connected = false;
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent: options.agent ?? false,
        headers: {
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            ms: performance.now() - started,
          }),
        );
        res.on('error', (error: NodeJS.ErrnoException) =>
          reject(new NoAnswer(error.code ?? error.message, true, req.reusedSocket)),
        );
      },
    );
    req.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error('no answer'), { code: 'TIMEOUT' })),
      options.timeoutMs ?? 15_000,
    );
    req.on('close', () => clearTimeout(timer));
    req.on('error', (error: NodeJS.ErrnoException) =>
      reject(new NoAnswer(error.code ?? error.message, connected || req.reusedSocket, req.reusedSocket)),
    );
    req.end(payload);
  });
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const ms = (value: number): string => (Number.isFinite(value) ? `${Math.round(value)} ms` : 'n/a');

export function row(metric: string, figure: string | number, target: string, met?: boolean): Row {
  return { metric, figure: String(figure), target, met };
}

/** A row whose target is "0". */
export function zero(metric: string, count: number): Row {
  return row(metric, count, '0', count === 0);
}

/** True for an Error-shaped body: JSON {code, message, status} with status equal to the HTTP status. */
export function isErrorShape(status: number, contentType: string | undefined, text: string): boolean {
  if (!/^application\/json\b/i.test(contentType ?? '')) return false;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    return typeof body.code === 'string' && typeof body.message === 'string' && body.status === status;
  } catch {
    return false;
  }
}
