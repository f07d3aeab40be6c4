/**
 * The one place configuration is read. Environment variables only, validated once at start;
 * a bad value throws a ConfigError naming the variable, and the CLI turns that into a clean exit.
 * A module's own variables are declared by the module (ApiModule.settings) and merged in here.
 */
import type { ModuleSettings } from './modules/module.js';
import { MODULE_SETTINGS } from './modules/settings.js';
import {
  ConfigError,
  integer,
  oneOf,
  databaseUrl,
  redisUrl,
  trustProxy,
  corsOrigins,
  httpTimeouts,
  metricsPort,
  publicUrl,
  cursorSecret,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type Env,
} from './config-parsers.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The service's settings and, through ModuleSettings, every module's. */
export interface Config extends ModuleSettings {
  port: number;
  host: string;
  /**
   * Unset: /metrics is served on the API port. Set: on a listener of its own on this port (same HOST), and
   * no longer on the API port, so it need not be public where the API is.
   */
  metricsPort: number | undefined;
  /** `sqlite:<path>` or `postgres://…` / `postgresql://…`. */
  databaseUrl: string;
  /** Unset: in-process rate-limit counters. */
  redisUrl: string | undefined;
  /** Prefix for every Redis key, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  logLevel: LogLevel;
  /** Per-minute quota for requests that present no valid key, counted per client address. */
  unauthenticatedPerMinute: number;
  /** An account is banned once its rejected requests within one minute exceed this many times its per-minute quota. */
  banThresholdFactor: number;
  banSeconds: number;
  /** Invalid keys an address may send in a minute before every request of its carrying a key is refused. */
  authFailuresPerMinute: number;
  /** `false`, `true`, or a comma-separated list of addresses/CIDRs whose X-Forwarded-For is believed. */
  trustProxy: boolean | string[];
  /** `normal` survives a process crash; `full` also survives power loss (fsync per commit). */
  sqliteSynchronous: 'normal' | 'full';
  /** Upper bound for connections in the PostgreSQL pool. */
  pgPoolSize: number;
  /** How long a request waits for the database before answering 503. */
  dbTimeoutMs: number;
  /** How long a request waits for Redis before falling back to in-process counters. */
  redisTimeoutMs: number;
  /** Browser origins (exact, `https://app.example.com`) allowed to call the API through CORS; empty: none. */
  corsOrigins: string[];
  /** After SIGTERM, how long /readyz answers 503 (so balancers route away) before the listener closes. */
  drainSeconds: number;
  /** How long a client may take to send a request's headers; then `408 request_timeout`. */
  headersTimeoutMs: number;
  /** How long a client may take to send a whole request (headers and body); then `408 request_timeout`. */
  requestTimeoutMs: number;
  /**
   * Where clients reach this deployment (`https://api.example.com`, no trailing slash), when set: `Location`,
   * `Link` and the OpenAPI `servers` become absolute. Unset: they stay root-relative.
   */
  publicUrl: string | undefined;
  /** The most requests in flight; beyond the in-flight budget new ones get `503 overloaded` (docs/operations.md). */
  overloadMaxInFlight: number;
  /** The mean wait of admitted requests that the in-flight budget (at most the maximum) is adjusted to. */
  overloadQueueMs: number;
  /** Open connections beyond which new ones are closed as soon as they are accepted. */
  maxConnections: number;
  /** A port of its own for `GET /healthz` (the liveness probe); unset: none. */
  healthPort: number | undefined;
  /** Extra listening sockets on the API's port (http/accept-listeners.ts); 0: none. */
  acceptCopies: number;
  /** The key authenticating list cursors (http/cursors.ts); unset: one made once and kept in the database. */
  cursorSecret: string | undefined;
}

/**
 * OVERLOAD_MAX_IN_FLIGHT, OVERLOAD_QUEUE_MS and MAX_CONNECTIONS's defaults, for apps built without a full Config.
 * The in-flight maximum is a cap on memory (at most 16 KiB of body each), not the admission rule: that is the
 * budget, which follows the wait (http/overload.ts). The wait is short (50 ms) because what the budget does
 * not admit waits its turn in the kernel, unread, and a turn of the event loop holds only what it admits.
 */
export const DEFAULT_OVERLOAD_MAX_IN_FLIGHT = 8192;
export const DEFAULT_OVERLOAD_QUEUE_MS = 50;
export const DEFAULT_MAX_CONNECTIONS = 10_000;
/**
 * Extra listeners on the API port (why they exist: http/accept-listeners.ts). Why 1,024 and not 256: with
 * 5,000 connections arriving at once, a probe waits behind ~5 others in its listener's queue instead of ~20,
 * and on a slow machine that kept probes under 1 s (bench/JOURNAL.md, 2026-11-28). One descriptor each.
 */
export const DEFAULT_ACCEPT_COPIES = 1024;

/** A variable as the table lists it: its default as an env file would write it (undefined: unset), its meaning. */
export interface Variable {
  name: string;
  default: string | undefined;
  description: string;
}

/** The variables of the service itself; VARIABLES adds the modules'. */
const SERVICE_VARIABLES: readonly Variable[] = [
  { name: 'PORT', default: '3000', description: 'Port to listen on.' },
  {
    name: 'HOST',
    default: '127.0.0.1',
    description: 'Address to listen on (0.0.0.0 to accept remote clients).',
  },
  {
    name: 'METRICS_PORT',
    default: undefined,
    description: 'Serve /metrics on a listener of its own on this port instead of PORT; unset: on PORT.',
  },
  {
    name: 'DATABASE_URL',
    default: 'sqlite:./data/pet-adoption.db',
    description: 'sqlite:<path> or postgres://… (?schema=NAME selects a PostgreSQL schema).',
  },
  {
    name: 'REDIS_URL',
    default: undefined,
    description: 'redis://…: rate-limit counters shared by every instance; unset: in-process counters.',
  },
  { name: 'REDIS_PREFIX', default: 'pet-adoption:', description: 'Prefix of every Redis key.' },
  {
    name: 'LOG_LEVEL',
    default: 'info',
    description: 'fatal, error, warn, info, debug, trace or silent; JSON lines on stdout.',
  },
  {
    name: 'UNAUTHENTICATED_PER_MINUTE',
    default: '60',
    description: 'Quota per client address for requests without a valid key.',
  },
  {
    name: 'BAN_THRESHOLD_FACTOR',
    default: '1',
    description: 'Ban an account whose rejected requests in a minute exceed this many times its quota.',
  },
  { name: 'BAN_SECONDS', default: '900', description: 'Length of a temporary ban.' },
  {
    name: 'AUTH_FAILURES_PER_MINUTE',
    default: '30',
    description: 'Invalid keys an address may send in a minute before its keyed requests are refused.',
  },
  {
    name: 'TRUST_PROXY',
    default: 'false',
    description: 'true, or comma-separated proxy addresses/CIDRs whose X-Forwarded-For is believed.',
  },
  {
    name: 'SQLITE_SYNCHRONOUS',
    default: 'normal',
    description: 'normal: writes survive a process crash; full: also power loss (fsync per commit).',
  },
  { name: 'PG_POOL_SIZE', default: '10', description: 'Upper bound of the PostgreSQL connection pool.' },
  {
    name: 'DB_TIMEOUT_MS',
    default: '2000',
    description: "One database call's whole budget, then 503 service_unavailable.",
  },
  {
    name: 'REDIS_TIMEOUT_MS',
    default: '50',
    description: 'How long a request waits for Redis before counting in-process instead.',
  },
  {
    name: 'CORS_ORIGINS',
    default: undefined,
    description: 'Comma-separated exact browser origins that may call the API; unset: none.',
  },
  {
    name: 'DRAIN_SECONDS',
    default: '5',
    description: 'After SIGTERM, how long /readyz answers 503 before the listener closes.',
  },
  {
    name: 'HEADERS_TIMEOUT_MS',
    default: String(DEFAULT_HEADERS_TIMEOUT_MS),
    description: "How long a client may take to send a request's headers; then 408.",
  },
  {
    name: 'REQUEST_TIMEOUT_MS',
    default: String(DEFAULT_REQUEST_TIMEOUT_MS),
    description: 'How long a client may take to send a whole request; then 408.',
  },
  {
    name: 'PUBLIC_URL',
    default: undefined,
    description: 'Where clients reach this deployment; set: Location and Link headers are absolute.',
  },
  {
    name: 'OVERLOAD_MAX_IN_FLIGHT',
    default: String(DEFAULT_OVERLOAD_MAX_IN_FLIGHT),
    description: 'The most requests in flight; beyond the in-flight budget, 503 overloaded.',
  },
  {
    name: 'OVERLOAD_QUEUE_MS',
    default: String(DEFAULT_OVERLOAD_QUEUE_MS),
    description: 'The mean wait of admitted requests the in-flight budget is adjusted to.',
  },
  {
    name: 'MAX_CONNECTIONS',
    default: String(DEFAULT_MAX_CONNECTIONS),
    description: 'Open connections beyond which new ones are closed at once.',
  },
  {
    name: 'HEALTH_PORT',
    default: undefined,
    description: 'A port of its own answering only GET /healthz; unset: none.',
  },
  {
    name: 'ACCEPT_COPIES',
    default: String(DEFAULT_ACCEPT_COPIES),
    description:
      'Extra listening sockets on the API port (SO_REUSEPORT), so connection storms are accepted at once; 0: none.',
  },
  {
    name: 'CURSOR_SECRET',
    default: undefined,
    description: 'Key (32..1024 characters) authenticating list cursors; unset: one kept in the database.',
  },
];

/**
 * Every variable the service reads, in one table: the service's own, then each module's (src/modules/settings.ts)
 * in module order. `.env.example` is generated from it (`npm run generate:env`), and test/deploy.test.ts
 * holds it to `loadConfig`: the same names, and each default, given explicitly, loads the same
 * configuration as leaving the variable unset. The README's configuration table says more.
 */
export const VARIABLES: readonly Variable[] = [...SERVICE_VARIABLES, ...MODULE_SETTINGS];

/** The modules' settings, each parsed by its module; a bad value throws a ConfigError naming its variable. */
function moduleSettings(env: Env): ModuleSettings {
  const settings: Record<string, unknown> = {};
  for (const { name, key, parse } of MODULE_SETTINGS) {
    const raw = env[name];
    try {
      settings[key] = parse(raw === '' ? undefined : raw);
    } catch (error) {
      throw new ConfigError(name, (error as Error).message);
    }
  }
  return settings as unknown as ModuleSettings;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  return {
    ...moduleSettings(env),
    port,
    metricsPort: metricsPort(env, port),
    host: env.HOST?.trim() || '127.0.0.1',
    databaseUrl: databaseUrl(env),
    redisUrl: redisUrl(env),
    redisPrefix: env.REDIS_PREFIX?.trim() || 'pet-adoption:',
    logLevel: oneOf<LogLevel>(env, 'LOG_LEVEL', 'info', [
      'fatal',
      'error',
      'warn',
      'info',
      'debug',
      'trace',
      'silent',
    ]),
    unauthenticatedPerMinute: integer(env, 'UNAUTHENTICATED_PER_MINUTE', 60, 1, 1_000_000_000),
    banThresholdFactor: integer(env, 'BAN_THRESHOLD_FACTOR', 1, 1, 1000),
    banSeconds: integer(env, 'BAN_SECONDS', 900, 1, 7 * 86400),
    authFailuresPerMinute: integer(env, 'AUTH_FAILURES_PER_MINUTE', 30, 1, 1_000_000_000),
    trustProxy: trustProxy(env),
    sqliteSynchronous: oneOf(env, 'SQLITE_SYNCHRONOUS', 'normal', ['normal', 'full'] as const),
    pgPoolSize: integer(env, 'PG_POOL_SIZE', 10, 1, 1000),
    dbTimeoutMs: integer(env, 'DB_TIMEOUT_MS', 2000, 10, 60_000),
    redisTimeoutMs: integer(env, 'REDIS_TIMEOUT_MS', 50, 5, 10_000),
    corsOrigins: corsOrigins(env),
    drainSeconds: integer(env, 'DRAIN_SECONDS', 5, 0, 300),
    ...httpTimeouts(env),
    publicUrl: publicUrl(env),
    overloadMaxInFlight: integer(env, 'OVERLOAD_MAX_IN_FLIGHT', DEFAULT_OVERLOAD_MAX_IN_FLIGHT, 1, 1_000_000),
    overloadQueueMs: integer(env, 'OVERLOAD_QUEUE_MS', DEFAULT_OVERLOAD_QUEUE_MS, 10, 60_000),
    maxConnections: integer(env, 'MAX_CONNECTIONS', DEFAULT_MAX_CONNECTIONS, 1, 1_000_000),
    healthPort: env.HEALTH_PORT?.trim() ? integer(env, 'HEALTH_PORT', 0, 0, 65535) : undefined,
    acceptCopies: integer(env, 'ACCEPT_COPIES', DEFAULT_ACCEPT_COPIES, 0, 4096),
    cursorSecret: cursorSecret(env),
  };
}
