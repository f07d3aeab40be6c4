/**
 * Child processes for the end-to-end suites: the built CLI (`node dist/cli.js`, what `npm start` and the
 * `pet-adoption` bin run), one-shot commands and `serve` instances on real sockets.
 * `npm test` builds first; run `npm run build` before running a file that uses these alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { PG_URL, REDIS_URL, uniqueName } from './services.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = join(ROOT, 'dist', 'cli.js');
/**
 * Generous bounds: only there so that a hang fails the test instead of stalling the run. A start costs about
 * 2.5 s of CPU; on two cores shared with a dozen busy processes that took 18–25 s, past the 20 s this was.
 */
const START_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 15_000;

/** Every child still running; `killAll()` ends them. */
const children = new Set<ChildProcess>();

export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  // No drain period unless a test asks for one: a SIGTERMed server stops listening at once.
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', DRAIN_SECONDS: '0', ...extra };
  // Whatever the developer's shell exports must not leak into the service under test.
  for (const name of [
    'PORT',
    'HOST',
    'METRICS_PORT',
    'DATABASE_URL',
    'REDIS_URL',
    'REDIS_PREFIX',
    'TRUST_PROXY',
    'DB_TIMEOUT_MS',
    'REDIS_TIMEOUT_MS',
    'PG_POOL_SIZE',
    'BAN_SECONDS',
    'BAN_THRESHOLD_FACTOR',
    'UNAUTHENTICATED_PER_MINUTE',
    'AUTH_FAILURES_PER_MINUTE',
    'HEADERS_TIMEOUT_MS',
    'REQUEST_TIMEOUT_MS',
    'PUBLIC_URL',
    'CORS_ORIGINS',
    'OVERLOAD_MAX_IN_FLIGHT',
    'MAX_CONNECTIONS',
    'HEALTH_PORT',
  ]) {
    if (!(name in extra)) delete env[name];
  }
  // Nor may tracing: OTEL_* would turn it on.
  for (const name of Object.keys(env)) if (name.startsWith('OTEL_') && !(name in extra)) delete env[name];
  return env;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function waitForExit(child: ChildProcess, timeoutMs = EXIT_TIMEOUT_MS): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`process ${child.pid} did not exit within ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

export interface CliResult extends Exit {
  stdout: string;
  stderr: string;
}

/** Runs a CLI command to completion (`timeoutMs` only bounds a hang; the benchmark seeds a million pets). */
export async function cli(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: baseEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  try {
    const exit = await waitForExit(child, timeoutMs);
    await closed;
    return { ...exit, stdout, stderr };
  } finally {
    children.delete(child);
  }
}

export interface Server {
  name: string;
  child: ChildProcess;
  /** `http://127.0.0.1:PORT/v1`, as the server announced it. */
  base: string;
  origin: string;
  /** Everything it wrote to stderr so far (the announcement, hints, fatal errors). */
  stderr(): string;
  /** Everything it wrote (stderr, and the last part of its stdout log), for failure messages. */
  output(): string;
}

export interface ServeOptions {
  /** Node arguments to run instead of `dist/cli.js serve` (flags, a script, its arguments); it must announce
   * itself the same way. The benchmark starts its reference servers and a profiled service this way. */
  argv?: string[];
  /** Append stdout (the log) to this file instead of reading it through a pipe, so a server logging every
   * request under load costs this process nothing. */
  logFile?: string;
}

/**
 * Starts `pet-adoption serve` and waits for its `listening on` line on stderr. PORT=0 lets the kernel
 * pick a free port (no probe-then-bind race); the announced address says which.
 */
export async function serve(
  name: string,
  env: Record<string, string>,
  options: ServeOptions = {},
): Promise<Server> {
  const logFd = options.logFile === undefined ? undefined : openSync(options.logFile, 'a');
  const child = spawn(process.execPath, options.argv ?? [CLI, 'serve'], {
    env: baseEnv({ PORT: '0', HOST: '127.0.0.1', ...env }),
    stdio: ['ignore', logFd ?? 'pipe', 'pipe'],
  });
  if (logFd !== undefined) closeSync(logFd);
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  let stdout = '';
  // The log goes to stdout; keep reading it so a full pipe never blocks the server.
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout = (stdout + chunk).slice(-20_000)));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not announce itself: ${stderr}`)),
      START_TIMEOUT_MS,
    );
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+\/v1)\b/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before listening: ${stderr}`));
    });
  });
  return {
    name,
    child,
    base,
    origin: new URL(base).origin,
    stderr: () => stderr,
    output: () => `${stderr}\n--- stdout ---\n${stdout}`,
  };
}

/** SIGTERM, then the exit and how long it took. */
export async function terminate(server: Server): Promise<Exit & { ms: number; from: number; to: number }> {
  const from = performance.now();
  server.child.kill('SIGTERM');
  const exit = await waitForExit(server.child);
  const to = performance.now();
  return { ...exit, ms: Math.round(to - from), from, to };
}

/** SIGKILLs every child still running and waits for each to go; for `after()`. */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...children].map(async (child) => {
      child.kill('SIGKILL');
      await waitForExit(child).catch(() => undefined);
    }),
  );
}

export interface Environment {
  env: Record<string, string>;
  cleanup(): Promise<void>;
}

/** The server environment for a backend: a fresh database (and counter namespace) of its own. */
export async function environmentFor(backend: { name: string }): Promise<Environment> {
  if (backend.name === 'sqlite+memory') {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-e2e-'));
    return {
      env: { DATABASE_URL: `sqlite:${join(dir, 'db.sqlite')}` },
      async cleanup() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  if (backend.name.startsWith('postgres')) {
    const { postgresUrl, dropSchema } = await import('./postgres.js');
    const { deleteKeys } = await import('./redis.js');
    const schema = uniqueName('e2e');
    const prefix = `${uniqueName('e2e')}:`;
    return {
      env: { DATABASE_URL: postgresUrl(schema), REDIS_URL, REDIS_PREFIX: prefix },
      async cleanup() {
        await dropSchema(schema);
        await deleteKeys(REDIS_URL, prefix);
      },
    };
  }
  throw new Error(`e2e: no server environment for backend ${backend.name} (PG_URL ${PG_URL}); add one here`);
}
