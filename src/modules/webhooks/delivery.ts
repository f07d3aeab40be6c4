/**
 * One HTTP delivery attempt, with the SSRF rules of DESIGN 4.4: the receiver's name is resolved on every
 * attempt, every address it resolves to must be public unicast (unless the host is in WEBHOOK_ALLOW_HOSTS),
 * and the connection goes to the address that was checked: the request's `lookup` answers with it, so no
 * second resolution can swap in another (DNS rebinding). Redirects are not followed (node:http never does),
 * at most 1 KiB of the answer is read, and the whole attempt is bounded by a timeout.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export const MAX_RESPONSE_BYTES = 1024;

export type AttemptResult =
  | { kind: 'answered'; statusCode: number; retryAfter: string | undefined }
  | { kind: 'error'; error: string }
  /** The SSRF rules refused the receiver's address (or it did not resolve); nothing was sent. */
  | { kind: 'refused'; error: string };

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
): Promise<LookupAddress | { refused: string }> {
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch (error) {
    return { refused: `could not resolve ${host}: ${(error as Error).message}` };
  }
  if (addresses.length === 0) return { refused: `${host} resolves to no address` };
  if (!allowHosts.includes(host)) {
    for (const { address } of addresses) {
      const range = refusedRange(address);
      if (range)
        return { refused: `refused: ${host} resolves to ${address} (${range}), not a public address` };
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
  if ('refused' in resolved) return { kind: 'refused', error: resolved.refused };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult): void => {
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
        // A fresh connection per attempt: every delivery is resolved and checked, none rides a pooled socket.
        agent: false,
        signal: options.signal,
      },
      (response) => {
        const statusCode = response.statusCode ?? 0;
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
      finish({ kind: 'error', error: `no answer within ${options.timeoutMs} ms` });
      request.destroy();
    }, options.timeoutMs);
    request.on('error', (error) => finish({ kind: 'error', error: error.message || error.name }));
    request.end(options.body);
  });
}
