/**
 * One request as the service asks clients to make it (docs/api.md): retries with exponential backoff and full jitter,
 * `Retry-After` honoured up to a bound, one `Idempotency-Key` per call reused by its retries, ETags
 * remembered and sent back as `If-Match`, a warning the first time an operation answers `Deprecation`.
 */
import {
  codeForStatus,
  parseErrorBody,
  PetAdoptionConnectionError,
  PetAdoptionError,
  RateLimitError,
  type PetAdoptionErrorInit,
} from './errors.js';
import { parseRateLimit, parseRetryAfter, type RateLimitState } from './rate-limit.js';

export interface DeprecationNotice {
  /** The operation, e.g. `GET /v1/pets/{petId}`. */
  operation: string;
  /** From `Deprecation` (RFC 9745, `@<epoch seconds>`). */
  deprecatedAt: Date | undefined;
  /** From `Sunset` (RFC 8594): when it stops working. */
  sunset: Date | undefined;
  /** The `rel="successor-version"` link: what to use instead. */
  successor: string | undefined;
  message: string;
}

export interface PetAdoptionClientOptions {
  /** An API key (`pas_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The service's root (`https://api.example.com`) or its `/v1` address; either works. */
  baseUrl: string;
  /** Retries after the first try, for connection errors, 408, 429, 500, 502, 503, 504 and `idempotency_in_progress`. Default 2. */
  maxRetries?: number;
  /** The longest `Retry-After` the client waits out; a longer one (the day window, a ban) throws `RateLimitError` at once. Default 60 000. */
  maxRetryAfterMs?: number;
  /** The fetch to use; the global one by default (Node 20, browsers). */
  fetch?: typeof globalThis.fetch;
  /** How the client waits between tries; `setTimeout` by default. Inject to test without waiting. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Epoch milliseconds, for HTTP-date `Retry-After` values and quota waits; `Date.now` by default. */
  now?: () => number;
  /** A number in [0, 1) for backoff jitter; `Math.random` by default. */
  random?: () => number;
  /** Called once per deprecated operation; `console.warn` of the notice's message by default. */
  onDeprecation?: (notice: DeprecationNotice) => void;
}

export interface RequestOptions {
  /** The `Idempotency-Key` of a POST, PATCH or DELETE; a new random one per call by default (its retries reuse it). */
  idempotencyKey?: string;
  /** `If-Match` to send: a given ETag, or `false` for none. By default the ETag this client last saw for the resource. */
  ifMatch?: string | false;
  signal?: AbortSignal;
}

export interface Call<T> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Under the `/v1` base, e.g. `/pets/12`. */
  path: string;
  /** An absolute URL instead of `path` (a `Link` target). */
  url?: string | undefined;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  body?: unknown;
  /** A body sent as these bytes (with `contentType`) instead of as JSON: an image upload. */
  bytes?: Uint8Array;
  contentType?: string;
  /** The answer is bytes (an image), returned as a Uint8Array instead of parsed JSON. */
  binaryResponse?: boolean;
  /** The operation's template, for deprecation notices: `GET /pets/{petId}`. */
  operation: string;
  /** The resource whose ETag this answer carries and whose remembered ETag goes into `If-Match`. */
  resource?: string | ((data: T) => string) | undefined;
  /** The answer removes the resource: forget its ETag. */
  removes?: boolean;
  /** Other resources the change touched (an order's pet): their remembered ETags are stale, forget them. */
  touches?: (data: T) => string[];
  options?: RequestOptions | undefined;
}

export interface Answer<T> {
  data: T;
  response: Response;
  /** The URL the answer came from (the base for its relative links). */
  url: string;
}

const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30_000;
/** ETags remembered at most; the oldest are forgotten first. */
const ETAG_MEMORY = 10_000;

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A random idempotency key. getRandomValues, unlike randomUUID, exists on plain-http pages too. */
function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** `https://host` or `https://host/v1` (with or without a trailing slash): the `/v1` address. */
export function apiBaseOf(baseUrl: string): string {
  const location = (globalThis as { location?: { href: string } }).location;
  const url = new URL(baseUrl, location?.href);
  let path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith('/v1')) path += '/v1';
  return url.origin + path;
}

export class Transport {
  readonly apiBase: string;
  /** The quota state the last answer reported. */
  rateLimit: RateLimitState | undefined;
  private readonly fetch: typeof globalThis.fetch;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly maxRetries: number;
  private readonly maxRetryAfterMs: number;
  private readonly onDeprecation: (notice: DeprecationNotice) => void;
  private readonly authorization: string;
  private readonly etags = new Map<string, string>();
  private readonly deprecationsSeen = new Set<string>();
  /** No request leaves before this instant: a 429's `Retry-After`, or a window the last answer showed empty. */
  private quietUntil = 0;
  /** The 429 that set `quietUntil`, to throw again when a caller will not wait that long. */
  private quietBecause: PetAdoptionErrorInit | undefined;

  constructor(options: PetAdoptionClientOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey === '')
      throw new TypeError('PetAdoptionClient: apiKey is required');
    this.apiBase = apiBaseOf(options.baseUrl);
    this.authorization = `Bearer ${options.apiKey}`;
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function')
      throw new TypeError('PetAdoptionClient: no global fetch here; pass options.fetch');
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.sleep = options.sleep ?? defaultSleep;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.maxRetries = Math.max(0, options.maxRetries ?? 2);
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.onDeprecation = options.onDeprecation ?? ((notice) => console.warn(notice.message));
  }

  /** The ETag this client last saw for a resource (`/pets/12`, `/store/orders/3`). */
  etagOf(resource: string): string | undefined {
    return this.etags.get(resource);
  }

  async request<T>(call: Call<T>): Promise<Answer<T>> {
    const url = call.url ?? this.urlOf(call.path, call.query);
    const options = call.options ?? {};
    const signal = options.signal;
    const headers: Record<string, string> = {
      authorization: this.authorization,
      accept: call.binaryResponse ? '*/*' : 'application/json',
    };
    let body: BodyInit | undefined;
    if (call.bytes !== undefined) {
      headers['content-type'] = call.contentType ?? 'application/octet-stream';
      // A Blob of the bytes: every fetch takes one, and it can be sent again on a retry.
      body = new Blob([call.bytes as Uint8Array<ArrayBuffer>]);
    } else if (call.body !== undefined) {
      headers['content-type'] = call.contentType ?? 'application/json';
      body = JSON.stringify(call.body);
    }
    // One key for the call, so a retry of a write whose answer was lost replays it instead of repeating it.
    if (call.method !== 'GET') headers['idempotency-key'] = options.idempotencyKey ?? newIdempotencyKey();
    const known = typeof call.resource === 'string' ? this.etags.get(call.resource) : undefined;
    const ifMatch = options.ifMatch === undefined ? known : options.ifMatch;
    if (ifMatch && call.method !== 'GET') headers['if-match'] = ifMatch;

    for (let attempt = 0; ; attempt++) {
      await this.waitForQuota(signal);
      let response: Response;
      let text = '';
      let bytes: Uint8Array | undefined;
      try {
        response = await this.fetch(url, { method: call.method, headers, body, signal });
        if (call.binaryResponse && response.ok) bytes = new Uint8Array(await response.arrayBuffer());
        else text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw error;
        if (attempt >= this.maxRetries)
          throw new PetAdoptionConnectionError(
            `${call.method} ${url} failed after ${attempt + 1} tries: ${(error as Error).message}`,
            { cause: error },
          );
        await this.sleep(this.backoff(attempt), signal);
        continue;
      }

      const rateLimit = parseRateLimit(response.headers);
      if (rateLimit) {
        this.rateLimit = rateLimit;
        this.noteEmptyWindow(rateLimit);
      }
      this.noticeDeprecation(call.operation, response.headers);

      if (response.ok) {
        const data = (bytes ?? (text === '' ? undefined : JSON.parse(text))) as T;
        this.rememberEtag(call, data, response.headers.get('etag'));
        return { data, response, url: response.url || url };
      }

      const init = this.errorInit(response, text, rateLimit);
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), this.now());
      if (response.status === 429) {
        const waitMs = retryAfterMs ?? this.backoff(attempt);
        this.quietUntil = Math.max(this.quietUntil, this.now() + waitMs);
        this.quietBecause = init;
        if (waitMs > this.maxRetryAfterMs || attempt >= this.maxRetries)
          throw new RateLimitError({ ...init, retryAfterMs: waitMs });
        continue; // waitForQuota waits it out
      }
      const retryable =
        RETRYABLE_STATUSES.has(response.status) ||
        (response.status === 409 && init.code === 'idempotency_in_progress');
      if (!retryable || attempt >= this.maxRetries) throw new PetAdoptionError(init);
      if (retryAfterMs !== undefined && retryAfterMs > this.maxRetryAfterMs) throw new PetAdoptionError(init);
      await this.sleep(retryAfterMs ?? this.backoff(attempt), signal);
    }
  }

  private urlOf(path: string, query: Call<unknown>['query']): string {
    const url = new URL(this.apiBase + path);
    for (const [name, value] of Object.entries(query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    return url.toString();
  }

  /** Full jitter (a random wait between 0 and the exponential bound), so retrying clients spread out. */
  private backoff(attempt: number): number {
    return Math.floor(this.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt));
  }

  private async waitForQuota(signal: AbortSignal | undefined): Promise<void> {
    const waitMs = this.quietUntil - this.now();
    if (waitMs <= 0) return;
    if (waitMs > this.maxRetryAfterMs) {
      // Sending would only earn another 429 and bring a ban nearer: answer for the service.
      const because = this.quietBecause;
      throw new RateLimitError({
        code: because?.code ?? 'rate_limited',
        status: 429,
        message: `${because?.message ?? 'Rate limit exceeded.'} (not sent: the quota resets in ${Math.ceil(waitMs / 1000)} s)`,
        requestId: because?.requestId,
        rateLimit: this.rateLimit,
        retryAfterMs: waitMs,
      });
    }
    await this.sleep(waitMs, signal);
  }

  /** A window at zero means the next request is refused until it resets: wait for that instead (if short). */
  private noteEmptyWindow(state: RateLimitState): void {
    const empty = state.windows.filter((w) => w.remaining === 0);
    if (empty.length === 0) return;
    const resetMs = Math.max(...empty.map((w) => w.resetMs));
    if (resetMs > this.maxRetryAfterMs) return; // the service will say so with a 429, and that is thrown
    this.quietUntil = Math.max(this.quietUntil, this.now() + resetMs);
  }

  private errorInit(
    response: Response,
    text: string,
    rateLimit: RateLimitState | undefined,
  ): PetAdoptionErrorInit {
    const body = parseErrorBody(text);
    return {
      code: body?.code ?? codeForStatus(response.status),
      message: body?.message ?? `HTTP ${response.status} ${response.statusText}`.trim(),
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? undefined,
      rateLimit,
      details: body?.details,
      headers: response.headers,
    };
  }

  private rememberEtag<T>(call: Call<T>, data: T, etag: string | null): void {
    for (const touched of call.touches?.(data) ?? []) this.etags.delete(touched);
    const resource = typeof call.resource === 'function' ? call.resource(data) : call.resource;
    if (resource === undefined) return;
    this.etags.delete(resource);
    if (call.removes || etag === null || etag.startsWith('W/')) return;
    this.etags.set(resource, etag);
    if (this.etags.size > ETAG_MEMORY) this.etags.delete(this.etags.keys().next().value!);
  }

  private noticeDeprecation(operation: string, headers: Headers): void {
    const deprecation = headers.get('deprecation');
    if (deprecation === null || this.deprecationsSeen.has(operation)) return;
    this.deprecationsSeen.add(operation);
    const epoch = /^@(-?\d+)$/.exec(deprecation.trim());
    const deprecatedAt = epoch ? new Date(Number(epoch[1]) * 1000) : undefined;
    const sunsetHeader = headers.get('sunset');
    const sunset =
      sunsetHeader && !Number.isNaN(Date.parse(sunsetHeader)) ? new Date(sunsetHeader) : undefined;
    const successor = /<([^>]*)>\s*;\s*rel="?successor-version"?/i.exec(headers.get('link') ?? '')?.[1];
    const name = `${operation.split(' ')[0]} /v1${operation.split(' ')[1] ?? ''}`;
    const message =
      `[@pet-adoption/client] ${name} is deprecated` +
      (deprecatedAt ? ` (since ${deprecatedAt.toISOString()})` : '') +
      (sunset ? `; it stops working on ${sunset.toISOString()}` : '') +
      (successor ? `; use ${successor} instead` : '') +
      '.';
    this.onDeprecation({ operation: name, deprecatedAt, sunset, successor, message });
  }
}
