/**
 * More accept handles on the API's listening socket, so that a storm of new connections is accepted as fast
 * as it arrives (docs/operations.md, "Overload").
 *
 * Why: on Node 20 (libuv 1.46) a listening handle accepts one connection per poll of the event loop, and
 * under a flood of keep-alive connections each turn of the loop is long, so the kernel's accept queue holds
 * thousands and every new connection, a liveness probe's or a reconnecting client's, waits seconds before its
 * request is even read (`bench/overload/accept-rate.ts` shows it without HTTP). With K more handles on the same
 * socket a poll reports K + 1 ready descriptors and accepts up to K + 1 connections. Node 22.12's
 * `listen({ reusePort: true })` would make this unnecessary.
 *
 * How, with documented Node APIs only: a socket gets a second descriptor in this process only by passing
 * through another one (SCM_RIGHTS), which Node's IPC does for a net.Server (`subprocess.send(message,
 * server)`). A helper process is sent the listening server once and sends it back K times; each copy arrives
 * here as a listening net.Server with a descriptor of its own.
 *
 * Every connection any copy accepts is handed to the HTTP server through its 'connection' event (the
 * documented way to give it a socket) in the same tick it was accepted, before the event loop polls again, so
 * no byte of it is read by anyone else and none waits unowned. That is the whole promise ("no connection is
 * stranded"), and it holds at every instant:
 * - Here, a copy is wired in the tick it arrives (Node emits 'message' on the next tick after the copy starts
 *   listening, before any poll), so it never accepts unwired.
 * - The helper's own descriptor listens too while it sends the copies (Node listens on any server it
 *   receives). It takes that handle over, before its first poll, with a server made `pauseOnConnect`, and
 *   sends back whatever it accepts: those sockets were never read, so their requests are still whole in the
 *   kernel when they arrive here. The helper closes its descriptor once this process has every copy, then exits.
 * - If this process dies, the helper sees its IPC channel close and exits: anything it accepted is closed.
 * - On close, every copy stops listening and the returned promise waits for every connection they accepted.
 *
 * Node listens again on every server it receives (child_process's handle conversion calls
 * `server.listen(handle)` with the default backlog, 511), and listen(2) on a listening socket sets its backlog
 * anew. So the last step listens once more, with the service's backlog, through the public
 * `server.listen(handle, backlog)` on one of the copies (a new net.Server takes that copy's handle over).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/**
 * The helper (plain JavaScript, run with `node -e`, so it works the same from sources and from dist/).
 * Protocol: parent → helper `{ count }` with the server; helper → parent `'copy'` with a server, K times,
 * `'connection'` with a socket it accepted, `'sent'` after the last copy was written; parent → helper
 * `'done'`; helper closes its descriptor, sends `'closed'` and waits to be disconnected.
 */
const HELPER_SCRIPT = `
const net = require('node:net');
let own;
// It goes when the service does (its IPC channel closes), never on its own: a Ctrl-C reaches the whole
// process group, and a helper gone mid-hand-over would close what it accepted and had not yet sent.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});
process.on('disconnect', () => process.exit(0));
// When the service dies while a handle it was sent waits for its acknowledgement, Node closes the channel
// without emitting 'disconnect' (the disconnect waits for a queue that will never drain); it does clear
// process.connected. Without this the helper would keep listening on the port, a socket nobody answers.
setInterval(() => { if (!process.connected) process.exit(0); }, 50).unref();
process.on('message', (message, received) => {
  if (message === 'done') {
    own?.close();
    process.send('closed');
    return;
  }
  own = net.createServer({ pauseOnConnect: true });
  own.on('connection', (socket) => process.send('connection', socket));
  own.listen(received);
  let written = 0;
  const sent = () => { if (++written === message.count) process.send('sent'); };
  for (let i = 0; i < message.count; i++) process.send('copy', own, sent);
});
`;

/**
 * The longest the helper may take to hand the copies over: then it is told to stop where it is (it closes its
 * own copy once everything it accepted is sent), and killed only if it does not answer in as long again.
 */
const HELPER_TIMEOUT_MS = 10_000;

export interface AcceptCopies {
  /** How many extra handles accept on the socket. */
  readonly count: number;
  /** Why fewer than asked for arrived (the helper could not run or failed): the service goes on with those. */
  readonly error?: unknown;
  /** Stops accepting on every extra handle; resolves once every connection they accepted has closed. */
  close(): Promise<void>;
}

/**
 * Adds up to `count` accept handles to `server`'s listening socket (which must be listening), then sets the
 * socket's backlog to `backlog`. A helper that cannot run or fails is not fatal: the copies that arrived serve,
 * and `error` says why the others did not.
 */
export async function addAcceptCopies(
  server: HttpServer,
  count: number,
  backlog: number,
): Promise<AcceptCopies> {
  if (count <= 0) return { count: 0, close: () => Promise.resolve() };
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
  const wire = (listener: NetServer): void => {
    listener.on('connection', handOver);
    // As an error of the server's own listening handle would be.
    listener.on('error', (error: Error) => server.emit('error', error));
    listeners.push(listener);
  };
  const closeAll = async (): Promise<void> => {
    await Promise.all(listeners.map((l) => new Promise<void>((resolve) => l.close(() => resolve()))));
  };

  const error = await duplicate(server, count, wire, handOver).then(
    () => undefined,
    (err: unknown) => err,
  );
  // The last listen(2) on the socket: the backlog the service asked for (see the header comment).
  const last = listeners.pop() ?? server;
  const restorer = new NetServer();
  wire(restorer);
  // Should listen(2) fail, Node closes that one descriptor; the others accept on at the smaller backlog.
  const backlogError = await new Promise<unknown>((resolve) => {
    restorer.once('error', resolve);
    restorer.listen(last, backlog, () => resolve(undefined));
  });

  return {
    // The restorer took the last copy's handle over; the server's own handle when none arrived.
    count: listeners.length - (last === server ? 1 : 0),
    error: error ?? backlogError,
    close: async () => {
      await closeAll();
      // The copies' connections are the HTTP server's now; wait until each has ended.
      await Promise.all([...accepted].map((socket) => once(socket, 'close')));
    },
  };
}

async function duplicate(
  server: HttpServer,
  count: number,
  wire: (listener: NetServer) => void,
  handOver: (socket: Socket) => void,
): Promise<void> {
  const helper = spawn(process.execPath, ['-e', HELPER_SCRIPT], {
    // Nothing inherited: the helper must never hold the service's own stdout or stderr (a supervisor waits
    // for those to close).
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    // The service's own NODE_OPTIONS (tracing's --import, a heap cap) are not the helper's business.
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const timer = setTimeout(() => {
    if (helper.connected) helper.send('done');
    setTimeout(() => helper.kill(), HELPER_TIMEOUT_MS).unref();
  }, HELPER_TIMEOUT_MS);
  try {
    await new Promise<void>((resolve, reject) => {
      helper.once('error', reject);
      helper.once('exit', (code, signal) =>
        reject(new Error(`the accept-copy helper exited early (${signal ?? code})`)),
      );
      helper.on('message', (message: unknown, handle: unknown) => {
        // Each branch runs in the tick the handle arrived, before the event loop polls again.
        if (message === 'connection') handOver(handle as Socket);
        else if (message === 'copy') wire(handle as NetServer);
        else if (message === 'sent' && helper.connected) helper.send('done');
        else if (message === 'closed') resolve();
      });
      helper.send({ count }, server);
    });
  } finally {
    clearTimeout(timer);
    helper.removeAllListeners('exit');
    if (helper.connected) helper.disconnect();
    // A helper that never started (spawn failed) has no exit to wait for.
    if (helper.pid !== undefined && helper.exitCode === null && helper.signalCode === null) {
      await once(helper, 'exit');
    }
  }
}
