/**
 * `/healthz` on a port of its own (HEALTH_PORT), for the orchestrator's liveness probe. Under a flood that
 * opens thousands of connections at once, the service's own port has thousands of connections waiting in
 * the kernel's accept queue, and Node (20, libuv 1.46) accepts about one per event-loop iteration while each
 * iteration is busy serving the connections already open: a probe's new connection waits behind all of them,
 * for seconds, however cheap its answer (bench/overload/accept-rate.ts shows the accept rate). This
 * listener's accept queue holds only the probes, so a probe is accepted and answered within an iteration or
 * two. It answers nothing but `GET`/`HEAD /healthz`: no API is reachable through it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, errorBody } from './errors.js';

const HEALTHY = JSON.stringify({ status: 'ok' });
const NOT_FOUND = JSON.stringify(
  errorBody(new ApiError('not_found', 'This port serves GET /healthz only; the API is on PORT.')),
);

export interface HealthListener {
  server: Server;
  /** `http://HOST:PORT` */
  origin: string;
  close(): Promise<void>;
}

export async function startHealthListener(host: string, port: number): Promise<HealthListener> {
  const server = createServer((req, res) => {
    const path = req.url?.split('?')[0];
    const ok = path === '/healthz' && (req.method === 'GET' || req.method === 'HEAD');
    const body = ok ? HEALTHY : NOT_FOUND;
    res.writeHead(ok ? 200 : 404, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  // A probe's connection is idle between probes only if the orchestrator keeps it; bound what one may hold.
  server.headersTimeout = 5_000;
  server.requestTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    origin: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
