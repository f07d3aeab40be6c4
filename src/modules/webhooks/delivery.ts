/**
 * One HTTP delivery attempt, with the service's SSRF rules (docs/api.md, "Webhooks"): the receiver's name is resolved on every
 * attempt, every address it resolves to must be public unicast (unless the host is in WEBHOOK_ALLOW_HOSTS),
 * and the connection goes to the address that was checked: the request's `lookup` answers with it, so no
 * second resolution can swap in another (DNS rebinding). Redirects are not followed (node:http never does),
 * at most 1 KiB of the answer is read, and the whole attempt is bounded by a timeout.
 *
 * Connections are kept alive, but only to the address just checked: each checked address has its own agent
 * whose every socket was opened to that address, so a delivery rides a pooled socket only when its name
 * resolved, on this attempt, to the same vetted address. A fresh TCP (and TLS) handshake per delivery would
 * cost more than the delivery itself on a busy instance.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export const MAX_RESPONSE_BYTES = 1024;

/**
 * What a client is told about a failed attempt (a delivery's `lastError`), besides `http_<status>`: a
 * category, never the resolver's or the socket's message, which can name the operator's internal addresses.
 * The detail goes to the attempt's log line.
 */
type FailureCategory = 'dns_failed' | 'address_not_allowed' | 'connect_failed' | 'timeout' | 'tls_failed';
type RefusalCategory = 'dns_failed' | 'address_not_allowed';

export type AttemptResult =
  | { kind: 'answered'; statusCode: number; retryAfter: string | undefined }
  | { kind: 'error'; category: Exclude<FailureCategory, RefusalCategory>; error: string }
  /** The SSRF rules refused the receiver's address (or it did not resolve); nothing was sent. */
  | { kind: 'refused'; category: RefusalCategory; error: string };

/** Hostnames compare without IPv6 brackets and case-insensitively. */
export function bareHost(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/**
 * Whether a URL may be registered: https, or http for a host in WEBHOOK_ALLOW_HOSTS; no credentials.
 * Returns the reason when not.
 */
export function urlProblem(raw: string, allowHosts: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && allowHosts.includes(bareHost(url.hostname))) return undefined;
  return 'must use https (http only for hosts in WEBHOOK_ALLOW_HOSTS)';
}

/**
 * Why an address is refused, or undefined for public unicast. ipaddr.js classifies every special range
 * (private, loopback, link-local, unique-local, unspecified, multicast, reserved, carrier-grade NAT,
 * documentation, …) as something other than `unicast`; IPv4-mapped IPv6 is judged as the IPv4 it carries.
 */
export function refusedRange(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return 'unparseable address';
  }
  const range = parsed.range();
  return range === 'unicast' ? undefined : range;
}

/** Resolves `host` and checks every address; the first one is what the request connects to. */
export async function resolveChecked(
  host: string,
  allowHosts: readonly string[],
  resolve: (host: string) => Promise<LookupAddress[]> = (h) => dnsLookup(h, { all: true, verbatim: true }),
): Promise<LookupAddress | { refused: string; category: 'dns_failed' | 'address_not_allowed' }> {
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch (error) {
    return { category: 'dns_failed', refused: `could not resolve ${host}: ${(error as Error).message}` };
  }
  if (addresses.length === 0) return { category: 'dns_failed', refused: `${host} resolves to no address` };
  if (!allowHosts.includes(host)) {
    for (const { address } of addresses) {
      const range = refusedRange(address);
      if (range)
        return {
          category: 'address_not_allowed',
          refused: `refused: ${host} resolves to ${address} (${range}), not a public address`,
        };
    }
  }
  return addresses[0]!;
}

/** A `lookup` for http.request that answers with the already-checked address, whatever it is asked. */
function pinnedLookup(address: LookupAddress): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [address]);
    else callback(null, address.address, address.family);
  }) as unknown as LookupFunction;
}

/** Idle pooled sockets close after this; below the 5 s keep-alive most servers (Node's included) grant. */
const IDLE_SOCKET_MS = 2000;
/** Agents of addresses no longer used are dropped once there are more than this many. */
const MAX_AGENTS = 64;
const agents = new Map<string, http.Agent>();

/** The agent whose sockets all go to `address` (over `protocol`). */
function agentFor(protocol: string, address: LookupAddress): http.Agent {
  const key = `${protocol}${address.address}`;
  let agent = agents.get(key);
  if (agent) {
    // Most recently used last, so the sweep below finds the stale ones first.
    agents.delete(key);
  } else {
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
    agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  }
  agents.set(key, agent);
  if (agents.size > MAX_AGENTS) {
    for (const [k, a] of agents) {
      if (agents.size <= MAX_AGENTS) break;
      if (Object.keys(a.sockets).length > 0 || Object.keys(a.requests).length > 0) continue;
      a.destroy();
      agents.delete(k);
    }
  }
  return agent;
}

export interface SendOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  allowHosts: readonly string[];
  timeoutMs: number;
  /** Test seam: the name resolution (dns.lookup with all: true by default). */
  resolve?: (host: string) => Promise<LookupAddress[]>;
  /** Aborts the attempt (shutdown); it then ends as an error. */
  signal?: AbortSignal;
}

export async function sendOnce(options: SendOptions): Promise<AttemptResult> {
  const url = new URL(options.url);
  const host = bareHost(url.hostname);
  const resolved = await resolveChecked(host, options.allowHosts, options.resolve);
  if ('refused' in resolved) return { kind: 'refused', category: resolved.category, error: resolved.refused };
  const agent = agentFor(url.protocol, resolved);
  const first = await attempt(url, options, resolved, agent);
  // A pooled socket the receiver closed while idle fails before any answer: the request (almost surely; a
  // duplicate is allowed anyway) never reached it, so it goes once more, to the same checked address.
  if (first.kind !== 'stale') return first;
  const second = await attempt(url, options, resolved, agent);
  return second.kind === 'stale'
    ? { kind: 'error', category: 'connect_failed', error: second.error }
    : second;
}

/** `stale`: a reused pooled socket was reset before any answer (the request was not received). */
type Attempt = AttemptResult | { kind: 'stale'; error: string };

/** OpenSSL's and Node's TLS error codes (certificate, handshake, protocol). */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|EPROTO$|HOSTNAME_MISMATCH)/;

/** An error before any answer: a TLS failure (handshake or certificate), or the connection failed. */
function failureCategory(error: NodeJS.ErrnoException, tlsStarted: boolean): 'connect_failed' | 'tls_failed' {
  return tlsStarted || TLS_CODE.test(error.code ?? '') ? 'tls_failed' : 'connect_failed';
}

function attempt(
  url: URL,
  options: SendOptions,
  resolved: LookupAddress,
  agent: http.Agent,
): Promise<Attempt> {
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<Attempt>((resolve) => {
    let settled = false;
    let answered = false;
    // https: the TCP connection is up and the TLS handshake not finished, so a failure now is TLS's.
    let tlsStarted = false;
    const finish = (result: Attempt): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = transport.request(
      url,
      {
        method: 'POST',
        headers: {
          ...options.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(options.body)),
          'user-agent': 'pet-adoption-webhooks/1',
        },
        lookup: pinnedLookup(resolved),
        agent,
        signal: options.signal,
      },
      (response) => {
        answered = true;
        const statusCode = response.statusCode ?? 0;
        // Node reads any three digits as a status ("HTTP/1.1 099"): one outside 100..999 is no HTTP
        // answer, and stored as one it would break every read of the delivery (its `lastStatusCode`).
        if (!(statusCode >= 100 && statusCode <= 999)) {
          finish({ kind: 'error', category: 'connect_failed', error: `invalid status code ${statusCode}` });
          response.destroy();
          return;
        }
        const retryAfter = response.headers['retry-after'];
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // The body is not needed beyond a glance; a receiver streaming forever must not hold us.
          if (read >= MAX_RESPONSE_BYTES) {
            finish({ kind: 'answered', statusCode, retryAfter });
            response.destroy();
          }
        });
        response.on('end', () => finish({ kind: 'answered', statusCode, retryAfter }));
        response.on('error', () => finish({ kind: 'answered', statusCode, retryAfter }));
      },
    );
    const timer = setTimeout(() => {
      finish({ kind: 'error', category: 'timeout', error: `no answer within ${options.timeoutMs} ms` });
      request.destroy();
    }, options.timeoutMs);
    if (url.protocol === 'https:') {
      request.on('socket', (socket) => {
        if (request.reusedSocket) return;
        socket.once('connect', () => (tlsStarted = true));
        socket.once('secureConnect', () => (tlsStarted = false));
      });
    }
    request.on('error', (error: NodeJS.ErrnoException) => {
      const detail = error.code ? `${error.code}: ${error.message}` : error.message || error.name;
      if (request.reusedSocket && !answered && error.code === 'ECONNRESET') {
        finish({ kind: 'stale', error: detail });
        return;
      }
      finish({ kind: 'error', category: failureCategory(error, tlsStarted), error: detail });
    });
    request.end(options.body);
  });
}
