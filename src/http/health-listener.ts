/**
 * `/healthz` on a port of its own (HEALTH_PORT), for an orchestrator that wants the liveness probe apart from
 * the API's connections. Under a flood that opens thousands of connections at once, a probe's new connection
 * on the API port waits behind every connection still to be accepted (Node accepts one per listening
 * socket per turn of the event loop); this listener's accept queue holds only the probes. It answers
 * nothing but `GET`/`HEAD /healthz`: no API is reachable through it.
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
