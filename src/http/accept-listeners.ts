/**
 * More listening sockets on the API's port (`SO_REUSEPORT`), so that a storm of new connections is accepted
 * as fast as it arrives (docs/operations.md, "Overload").
 *
 * Why: a listening socket accepts one connection per poll of the event loop (libuv since 1.45; Node 20 and 24
 * alike, `bench/overload/accept-rate.ts` shows it without HTTP), and under a flood of keep-alive connections
 * each turn of the loop is long, so the kernel's accept queue holds thousands and every new connection, a
 * liveness probe's or a reconnecting client's, waits seconds before its request is even read. With K more
 * listeners a poll finds up to K + 1 ready sockets and accepts up to K + 1 connections.
 *
 * How, with Node's public API only (22.12 and later, Linux): the API's own server listens with
 * `reusePort: true`, and K more net.Servers in this process listen on the same address and port with
 * `reusePort: true`, each with an accept queue of its own among which the kernel spreads new connections.
 * Every connection any of them accepts is handed to the HTTP server through its 'connection' event (the
 * documented way to give it a socket) in the same tick it was accepted, before the event loop polls again, so
 * no byte of it is read by anyone else and none waits unowned. That is the whole promise ("no connection is
 * stranded"), and it holds at every instant: a listener is wired before it listens, and all of them belong to
 * this process, so they live and die with it. On close every listener stops in the same tick (what was queued
 * on any of them is refused, as on a single socket), and the returned promise waits for every connection they
 * accepted.
 *
 * `SO_REUSEPORT` lets any process of the same user join the port: a second instance started on the same port
 * by the same user shares the connections instead of failing with EADDRINUSE. With K = 0 the API's server
 * listens without it.
 */
import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';

export interface AcceptListeners {
  /** How many extra listeners accept on the port. */
  readonly count: number;
  /** Why fewer than asked for listen (the platform or the Node lacks `reusePort`): the service goes on. */
  readonly error?: unknown;
  /** Stops every extra listener; resolves once every connection they accepted has closed. */
  close(): Promise<void>;
}

/**
 * Adds up to `count` listeners on the address and port `server` listens on (it must be listening, with
 * `reusePort: true`), each with `backlog`. One that cannot listen is not fatal: those that did serve, and
 * `error` says why the others did not.
 */
export async function addAcceptListeners(
  server: HttpServer,
  count: number,
  backlog: number,
): Promise<AcceptListeners> {
  if (count <= 0) return { count: 0, close: () => Promise.resolve() };
  const { address, port } = server.address() as AddressInfo;
  const listeners: NetServer[] = [];
  const accepted = new Set<Socket>();
  let open = 0;
  const over = (): boolean => server.maxConnections > 0 && open >= server.maxConnections;
  // Node checks maxConnections against the connections its own handle accepted only: count them all here.
  server.prependListener('connection', (socket: Socket) => {
    if (!accepted.has(socket) && over()) {
      socket.destroy();
      server.emit('drop');
      return;
    }
    open++;
    socket.once('close', () => void open--);
  });
  const handOver = (socket: Socket): void => {
    if (over()) {
      socket.destroy();
      server.emit('drop');
      return;
    }
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
    server.emit('connection', socket);
  };

  let error: unknown;
  for (let i = 0; i < count; i++) {
    const listener = new NetServer();
    listener.on('connection', handOver);
    const failed = await new Promise<unknown>((resolve) => {
      listener.once('error', resolve);
      listener.listen({ host: address, port, backlog, reusePort: true }, () => {
        listener.off('error', resolve);
        resolve(undefined);
      });
    });
    if (failed !== undefined) {
      error = failed;
      break;
    }
    // As an error of the server's own listening socket would be.
    listener.on('error', (err: Error) => server.emit('error', err));
    listeners.push(listener);
  }

  return {
    count: listeners.length,
    error,
    close: async () => {
      await Promise.all(listeners.map((l) => new Promise<void>((resolve) => l.close(() => resolve()))));
      // The listeners' connections are the HTTP server's now; wait until each has ended.
      await Promise.all([...accepted].map((socket) => once(socket, 'close')));
    },
  };
}
