/**
 * Extra listeners on the API's port (src/http/accept-listeners.ts, `reusePort`): sockets of their own on the
 * same address and port that accept connections and hand them to the HTTP server. Shown without timing: once
 * the server's own socket stops listening, every new connection can only have been accepted by an extra
 * listener, so an answered request proves they accept and hand over; closing them frees the port. Whether
 * they make a flood's new connections prompt is the overload benchmark's business; that no connection is
 * left unanswered from the first millisecond is test/connections.test.ts's, with the built server.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import { connect, Server as NetServer, type AddressInfo } from 'node:net';
import { afterEach, test } from 'node:test';
import { addAcceptListeners, type AcceptListeners } from '../src/http/accept-listeners.js';

let server: Server | undefined;
let handles: AcceptListeners | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await handles?.close();
  if (server?.listening) await new Promise((resolve) => server!.close(resolve));
  server = handles = undefined;
});

async function listening(backlog = 511, reusePort = true): Promise<number> {
  server = createServer((req, res) => res.end(`served ${req.url}`));
  await new Promise<void>((resolve) =>
    server!.listen({ port: 0, host: '127.0.0.1', backlog, reusePort }, resolve),
  );
  return (server.address() as AddressInfo).port;
}

/** Stops the server's own socket only: the port stays open through the extra listeners. */
function closeOwnHandle(target: Server): Promise<void> {
  return new Promise((resolve) => NetServer.prototype.close.call(target, () => resolve()));
}

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the extra listeners accept on the same port and the HTTP server answers their connections', async () => {
  const port = await listening();
  handles = await addAcceptListeners(server!, 4, 511);
  assert.equal(handles.count, 4);
  void closeOwnHandle(server!);
  const bodies = await Promise.all(Array.from({ length: 20 }, (_, i) => get(port, `/${i}`)));
  assert.deepEqual(
    bodies,
    Array.from({ length: 20 }, (_, i) => `served /${i}`),
  );
});

test('closing the extra listeners frees the port: nothing accepts on it any more', async () => {
  const port = await listening();
  handles = await addAcceptListeners(server!, 2, 511);
  await closeOwnHandle(server!);
  assert.equal(await get(port, '/before'), 'served /before');
  await handles.close();
  const refused = connect(port, '127.0.0.1');
  const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
  assert.equal(error.code, 'ECONNREFUSED');
});

test('maxConnections counts the connections of every listener', async () => {
  const port = await listening();
  server!.maxConnections = 2;
  handles = await addAcceptListeners(server!, 3, 511);
  void closeOwnHandle(server!);
  const open = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
  // Both are counted once accepted: a request on each is answered.
  for (const socket of open) {
    socket.write('GET /kept HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(socket, 'data');
  }
  const dropped = once(server!, 'drop');
  const third = connect(port, '127.0.0.1');
  third.on('error', () => {});
  await dropped;
  await once(third, 'close');
  for (const socket of open) socket.destroy();
});

/** The accept-queue limit of each socket listening on the port (`ss`'s Send-Q for a listener; Linux). */
function listenBacklogs(port: number): number[] {
  const lines = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim();
  return lines.split('\n').map((line) => Number(line.trim().split(/\s+/)[2]));
}

test('each listener is a socket of its own, with the backlog it was given', async () => {
  const port = await listening(1000);
  handles = await addAcceptListeners(server!, 3, 1000);
  assert.deepEqual(listenBacklogs(port), [1000, 1000, 1000, 1000]);
});

test('a socket that did not allow it, or a Node without reusePort, gets no extra listener; it still serves', async () => {
  const port = await listening(511, false);
  handles = await addAcceptListeners(server!, 2, 511);
  assert.equal(handles.count, 0);
  assert.equal((handles.error as NodeJS.ErrnoException).code, 'EADDRINUSE');
  assert.equal(await get(port, '/alone'), 'served /alone');
});

test('none asked, none made', async () => {
  await listening();
  handles = await addAcceptListeners(server!, 0, 511);
  assert.equal(handles.count, 0);
});

test('closing waits until every connection an extra listener accepted has ended', async () => {
  const port = await listening();
  handles = await addAcceptListeners(server!, 2, 511);
  await closeOwnHandle(server!);
  const client = connect(port, '127.0.0.1');
  client.write('GET /kept HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(client, 'data');
  let closed = false;
  const closing = handles.close().then(() => (closed = true));
  // Nothing accepts on the port any more, but the kept-alive connection is still open: not closed yet.
  const refused = connect(port, '127.0.0.1');
  await once(refused, 'error');
  assert.equal(closed, false);
  client.end();
  await closing;
  assert.equal(closed, true);
});
