/** How src/config.ts reads each of the service's variables; a bad value throws a ConfigError naming it. */
import type { Config } from './config.js';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `expected ${min}..${max}, got ${value}`);
  return value;
}

export function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase() as T;
  if (!allowed.includes(value))
    throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got "${raw}"`);
  return value;
}

export function databaseUrl(env: Env): string {
  const raw = env.DATABASE_URL?.trim() || 'sqlite:./data/pet-adoption.db';
  if (raw.startsWith('sqlite:')) {
    if (raw.length === 'sqlite:'.length) throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path');
    return raw;
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL', 'not a valid postgres:// URL');
    }
    return raw;
  }
  throw new ConfigError('DATABASE_URL', 'expected sqlite:<path> or postgres://…');
}

export function redisUrl(env: Env): string | undefined {
  const raw = env.REDIS_URL?.trim();
  if (!raw) return undefined;
  if (!/^rediss?:\/\//.test(raw)) throw new ConfigError('REDIS_URL', 'expected redis://… or rediss://…');
  try {
    new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL', 'not a valid URL');
  }
  return raw;
}

export function trustProxy(env: Env): boolean | string[] {
  const raw = env.TRUST_PROXY?.trim();
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  const list = raw.split(',').map((s) => s.trim());
  for (const entry of list) {
    if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry)) {
      throw new ConfigError('TRUST_PROXY', `"${entry}" is not an address or CIDR`);
    }
  }
  return list;
}

export function corsOrigins(env: Env): string[] {
  const raw = env.CORS_ORIGINS?.trim();
  if (!raw) return [];
  return raw.split(',').map((entry) => {
    const value = entry.trim();
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError('CORS_ORIGINS', `"${value}" is not an origin like https://app.example.com`);
    }
    // Browsers send the serialized origin (lower-case host, no default port, no path), and the check is an
    // exact comparison: anything else would silently never match, so it is refused here.
    if (!/^https?:$/.test(url.protocol) || url.origin !== value) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `"${value}" is not an exact origin (scheme://host[:port], no path or trailing slash)` +
          (/^https?:$/.test(url.protocol) ? `; did you mean ${url.origin}?` : ''),
      );
    }
    return value;
  });
}

export function httpTimeouts(env: Env): Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'> {
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', DEFAULT_HEADERS_TIMEOUT_MS, 50, 600_000);
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', DEFAULT_REQUEST_TIMEOUT_MS, 50, 3_600_000);
  // Node refuses to start a server whose header bound is longer than its whole-request bound.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`,
    );
  }
  return { headersTimeoutMs, requestTimeoutMs };
}

export function metricsPort(env: Env, port: number): number | undefined {
  if (env.METRICS_PORT === undefined || env.METRICS_PORT.trim() === '') return undefined;
  const value = integer(env, 'METRICS_PORT', 0, 0, 65535);
  // 0 asks the kernel for a free port (tests), so only two equal fixed ports collide.
  if (value !== 0 && value === port) {
    throw new ConfigError(
      'METRICS_PORT',
      `must differ from PORT (${port}); unset it to serve /metrics on PORT`,
    );
  }
  return value;
}

export function publicUrl(env: Env): string | undefined {
  const raw = env.PUBLIC_URL?.trim();
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL', `"${raw}" is not an absolute URL like https://api.example.com`);
  }
  if (!/^https?:$/.test(url.protocol))
    throw new ConfigError('PUBLIC_URL', `expected an http:// or https:// URL, got "${raw}"`);
  // Links are built by appending `/v1/…`: a query or fragment would end up in the middle of them.
  if (url.search !== '' || url.hash !== '' || raw.includes('?') || raw.includes('#'))
    throw new ConfigError('PUBLIC_URL', `must not have a query or fragment, got "${raw}"`);
  if (url.username !== '' || url.password !== '')
    throw new ConfigError('PUBLIC_URL', 'must not carry a user name or password');
  // A path is kept (a proxy may serve the API under a prefix); the trailing slash goes, since `/v1/…` follows.
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The HTTP timeouts' defaults, for apps built without a full Config (tests, benchmarks). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export type Env = Record<string, string | undefined>;

export function cursorSecret(env: Env): string | undefined {
  const raw = env.CURSOR_SECRET;
  if (raw === undefined || raw === '') return undefined;
  // The value is never echoed: it is a secret.
  if (raw.length < 32 || raw.length > 1024 || raw.trim() !== raw)
    throw new ConfigError('CURSOR_SECRET', 'expected 32..1024 characters without surrounding spaces');
  return raw;
}
