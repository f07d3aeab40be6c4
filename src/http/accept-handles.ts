import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';

/**
 * The helper process: every listening server it is sent, it sends back (as a new descriptor). Its own copies
 * listen too until it is told `done`: a connection one of them accepts meanwhile is sent back as well, so none
 * is stranded in the helper, then it closes them and says `closed`.
 */
const HELPER_SCRIPT = `
const copies = [];
process.on('message', (message, server) => {
  if (message === 'done') {
    for (const copy of copies) copy.close();
    process.send('closed');
    return;
  }
  copies.push(server);
  server.on('connection', (socket) => process.send('connection', socket));
  process.send(message, server);
});
`;

export interface AcceptHandles {
  /** How many extra handles accept on the socket. */
  readonly count: number;
  /** Stops accepting on every extra handle; resolves once the connections they accepted have all closed. */
  close(): Promise<void>;
}

/**
 * Extra accept handles on the API's listening socket, each handing its connections to `server`.
 *
 * Why: on Node 20 (libuv 1.46) a listening handle accepts one connection per poll of the event loop
 * (`uv__server_io`), and a new connection is only watched from the next loop iteration. Under a flood of
 * keep-alive connections the iterations are long, so the kernel's accept queue fills (4,000 waiting at 5,000
 * connections, `ss -ltn`) and every new connection, a liveness probe's or a client's reconnecting, waits
 * seconds before its request is even read, whatever the service would answer: no admission rule reaches a
 * connection that is not accepted. With K more handles on the same socket, a poll reports K + 1 ready
 * descriptors and accepts K + 1 connections (measured on bare node:http under thousands of connections: the
 * accept queue stays short with the handles and fills without them; docs/performance.md).
 *
 * How: a socket can only be given a second descriptor by passing it through another process (SCM_RIGHTS),
 * which Node's IPC does for a net.Server (`subprocess.send(message, server)`, documented). A short-lived helper
 * sends it back K times; each copy arrives as a listening net.Server with a descriptor of its own. The helper
 * is waited for until it has closed its own copies and exited, and whatever it accepted meanwhile is handed
 * over. Node 22.12's `listen({ reusePort: true })` would give K sockets directly and make this unnecessary.
 *
 * The copies only accept. Their connections go to the HTTP server through its 'connection' event, the
 * documented way to hand it a socket, so keep-alive, timeouts and connection tracking (closeIdleConnections)
 * apply to them alike. `server.maxConnections` is enforced over all connections, whichever handle took them.
 */
export async function addAcceptHandles(
  server: HttpServer,
  count: number,
  backlog: number,
): Promise<AcceptHandles> {
  if (count <= 0) return { count: 0, close: () => Promise.resolve() };
  // Connections the helper accepted before it closed its copies arrive before the handles are wired.
  const early: Socket[] = [];
  const handles = await duplicate(server, count, (socket) => early.push(socket)).catch((error: unknown) => {
    for (const socket of early) socket.destroy();
    throw error;
  });
  try {
    restoreBacklog(server, backlog);
  } catch (error) {
    for (const handle of handles) handle.close();
    for (const socket of early) socket.destroy();
    throw error;
  }

  let open = 0;
  const viaHandles = new WeakSet<Socket>();
  const over = (): boolean => server.maxConnections > 0 && open >= server.maxConnections;
  const drop = (socket: Socket): void => {
    socket.destroy();
    server.emit('drop');
  };
  // Node checks maxConnections against the connections its own handle accepted only: count them all here.
  server.prependListener('connection', (socket: Socket) => {
    if (!viaHandles.has(socket) && over()) return drop(socket);
    open++;
    socket.once('close', () => void open--);
  });
  const accept = (socket: Socket): void => {
    if (over()) return drop(socket);
    viaHandles.add(socket);
    server.emit('connection', socket);
  };
  for (const handle of handles) {
    handle.on('connection', accept);
    // As an error of the server's own listening handle would be.
    handle.on('error', (error: Error) => server.emit('error', error));
  }
  for (const socket of early) accept(socket);

  return {
    count: handles.length,
    close: () =>
      Promise.all(handles.map((h) => new Promise<void>((resolve) => h.close(() => resolve())))).then(
        () => undefined,
      ),
  };
}

/**
 * Node listens again on every copy it receives, in the helper and here (child_process's handle conversion calls
 * `server.listen(handle)`, with Node's default backlog of 511), and listen(2) on a listening socket sets its
 * backlog anew: the accept queue shrank from the server's 4,096 to 511 (`ss -ltn`, Send-Q), so a flood's
 * connection storm overflowed it, and every SYN dropped meanwhile, a liveness probe's among them, is only
 * retried by its client a second later. Listening once more on the server's own descriptor puts the backlog
 * back. Node offers no public way to listen again on a listening server; `_handle.listen(backlog)` is what
 * net.Server.listen itself calls.
 */
function restoreBacklog(server: HttpServer, backlog: number): void {
  const handle = (server as unknown as { _handle?: { listen?: (backlog: number) => number } })._handle;
  const status = handle?.listen?.(backlog);
  if (status !== 0) throw new Error(`could not set the listen backlog back to ${backlog} (status ${status})`);
}

async function duplicate(
  server: HttpServer,
  count: number,
  strayConnection: (socket: Socket) => void,
): Promise<NetServer[]> {
  const helper = spawn(process.execPath, ['-e', HELPER_SCRIPT], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // The service's own NODE_OPTIONS (a heap cap, a profiler) are not the helper's business.
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const handles: NetServer[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      helper.once('error', reject);
      helper.once('exit', (code, signal) =>
        reject(new Error(`the accept-handle helper exited early (${signal ?? code})`)),
      );
      helper.on('message', (message, handle) => {
        if (message === 'connection') return strayConnection(handle as Socket);
        if (message === 'closed') return resolve();
        handles.push(handle as NetServer);
        if (handles.length === count) helper.send('done');
      });
      for (let i = 0; i < count; i++) helper.send(i, server);
    });
  } catch (error) {
    for (const handle of handles) handle.close();
    throw error;
  } finally {
    helper.removeAllListeners('exit');
    helper.removeAllListeners('message');
    if (helper.connected) helper.disconnect();
    if (helper.exitCode === null && helper.signalCode === null) {
      const exited = once(helper, 'exit');
      helper.kill();
      await exited;
    }
  }
  return handles;
}
