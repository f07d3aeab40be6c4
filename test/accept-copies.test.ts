/**
 * Extra accept handles (src/http/accept-copies.ts): copies of the API's listening socket that accept
 * connections and hand them to the HTTP server. Shown without timing: once the server's own handle stops
 * listening, every new connection can only have been accepted by a copy, so an answered request proves the
 * copies accept and hand over; closing them frees the port. Whether they make a flood's new connections
 * prompt is the overload benchmark's business.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import { connect, Server as NetServer, type AddressInfo } from 'node:net';
import { afterEach, test } from 'node:test';
import { addAcceptCopies, type AcceptCopies } from '../src/http/accept-copies.js';

let server: Server | undefined;
let handles: AcceptCopies | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await handles?.close();
  if (server?.listening) await new Promise((resolve) => server!.close(resolve));
  server = handles = undefined;
});

async function listening(backlog = 511): Promise<number> {
  server = createServer((req, res) => res.end(`served ${req.url}`));
  await new Promise<void>((resolve) => server!.listen({ port: 0, host: '127.0.0.1', backlog }, resolve));
  return (server.address() as AddressInfo).port;
}

/** Stops the server's own handle only: the socket stays open through the copies. */
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

test('the copies accept on the same socket and the HTTP server answers their connections', async () => {
  const port = await listening();
  handles = await addAcceptCopies(server!, 4, 511);
  assert.equal(handles.count, 4);
  void closeOwnHandle(server!);
  const bodies = await Promise.all(Array.from({ length: 20 }, (_, i) => get(port, `/${i}`)));
  assert.deepEqual(
    bodies,
    Array.from({ length: 20 }, (_, i) => `served /${i}`),
  );
});

test('closing the copies closes the socket: nothing accepts on the port any more', async () => {
  const port = await listening();
  handles = await addAcceptCopies(server!, 2, 511);
  await closeOwnHandle(server!);
  assert.equal(await get(port, '/before'), 'served /before');
  await handles.close();
  const refused = connect(port, '127.0.0.1');
  const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
  assert.equal(error.code, 'ECONNREFUSED');
});

test('maxConnections counts the connections of every handle', async () => {
  const port = await listening();
  server!.maxConnections = 2;
  handles = await addAcceptCopies(server!, 3, 511);
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

/** How many processes hold a listening descriptor of the port (`ss -p`; Linux). */
function listeningProcesses(port: number): number {
  const line = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  return new Set(line.match(/pid=\d+/g) ?? []).size;
}

/** The listening socket's accept-queue limit as the kernel holds it (`ss`'s Send-Q for a listener; Linux). */
function listenBacklog(port: number): number {
  const line = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim();
  return Number(line.split(/\s+/)[2]);
}

test('the socket keeps the backlog it was given: receiving a copy does not reset it to the default', async () => {
  const port = await listening(1000);
  assert.equal(listenBacklog(port), 1000);
  handles = await addAcceptCopies(server!, 3, 1000);
  assert.equal(listenBacklog(port), 1000);
});

test('no copies asked, none made', async () => {
  await listening();
  handles = await addAcceptCopies(server!, 0, 511);
  assert.equal(handles.count, 0);
});

test('closing waits until every connection a copy accepted has ended', async () => {
  const port = await listening();
  handles = await addAcceptCopies(server!, 2, 511);
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

test('a service killed while the copies are being handed over leaves nothing listening and no pipe open', async () => {
  const module = new URL('../src/http/accept-copies.ts', import.meta.url).href;
  const script = `
    import { createServer } from 'node:http';
    import { addAcceptCopies } from ${JSON.stringify(module)};
    const server = createServer((req, res) => res.end('x'));
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      process.stdout.write(server.address().port + '\\n');
      void addAcceptCopies(server, 256, 511);
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // 'close' comes once every process holding the child's stdout and stderr has let go of them.
  const pipesClosed = once(child, 'close');
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(chunk.toString().trim());
  // Once the helper listens too (a second process on the port), it is mid-hand-over: a copy listening and a
  // handle awaiting acknowledgement. Then the service dies.
  for (let attempt = 0; listeningProcesses(port) < 2; attempt++) {
    assert.ok(attempt < 200, 'the helper never listened');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child.kill('SIGKILL');
  // A bound only, so that a leftover holding the pipes fails the test instead of hanging it.
  const timer = setTimeout(() => child.stdout!.emit('leftover'), 10_000);
  const closed = await Promise.race([
    pipesClosed.then(() => true),
    once(child.stdout!, 'leftover').then(() => false),
  ]);
  clearTimeout(timer);
  assert.ok(closed, 'the service is gone but its stdout or stderr is still held open');
  // Nothing listens on the port any more: a new server can bind it.
  for (let attempt = 0; ; attempt++) {
    const probe = new NetServer();
    const bound = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(true));
    });
    if (bound) {
      await new Promise((resolve) => probe.close(resolve));
      break;
    }
    assert.ok(attempt < 40, `port ${port} is still held after the service was killed`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
