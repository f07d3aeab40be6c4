/**
 * Why new connections wait under a flood: on Node 20 and 24 (libuv 1.46, 1.52.1) a listening socket accepts
 * about one connection per event-loop iteration, so while each iteration is busy (every ready keep-alive socket's
 * request is handled in it) the kernel's accept queue drains at 1 / iteration time. A flood that opens
 * thousands of connections at once leaves most of them queued for seconds, and a liveness probe's new
 * connection waits behind them (FIFO): its handshake completes in the kernel at once, its request is not read
 * until the server accepts it. This script shows it without any HTTP: 500 connections against a server whose
 * iterations take 30 ms.
 *
 *   node --import tsx bench/overload/accept-rate.ts     # e.g. "accepted 89 of 500 in 3000 ms (~100 iterations)"
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

const ITERATION_MS = 30;
const CLIENTS = 500;
const WATCH_MS = 3000;

let accepted = 0;
const server = createServer(() => void accepted++);
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  const { port } = server.address() as AddressInfo;
  let busy = true;
  const iterate = (): void => {
    const end = Date.now() + ITERATION_MS;
    while (Date.now() < end);
    if (busy) setImmediate(iterate);
  };
  iterate();
  const clients: Socket[] = [];
  for (let i = 0; i < CLIENTS; i++) clients.push(connect(port, '127.0.0.1').on('error', () => {}));
  setTimeout(() => {
    busy = false;
    process.stdout.write(
      `accepted ${accepted} of ${CLIENTS} in ${WATCH_MS} ms (~${Math.round(WATCH_MS / ITERATION_MS)} iterations of ${ITERATION_MS} ms)\n`,
    );
    for (const c of clients) c.destroy();
    server.close();
  }, WATCH_MS);
});
