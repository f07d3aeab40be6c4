/**
 * The benchmark's yardstick: a bare node:http server that answers every request with one recorded response
 * of the real service (status, headers and body bytes), and does nothing else. bench/run.ts starts it as a
 * child process, like the service, so both pay the same process and socket costs.
 *
 *   PORT=0 node --import tsx bench/baseline-server.ts <recorded.json>
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { RecordedResponse } from './lib/service.js';

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: PORT=0 baseline-server.ts <recorded.json>\n');
  process.exit(2);
}
const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedResponse;
const body = Buffer.from(recorded.body, 'base64');
const headers = recorded.headers.flat();

const server = createServer((_req, res) => {
  res.writeHead(recorded.status, headers);
  res.end(body);
});
// Same keep-alive policy as Fastify's default, so the Keep-Alive header is byte-identical too.
server.keepAliveTimeout = 72_000;
// The service's listen backlog (src/server.ts), so a flood of new connections meets the same accept queue.
server.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1', backlog: 4096 }, () => {
  const { port } = server.address() as AddressInfo;
  process.stderr.write(`baseline listening on http://127.0.0.1:${port}/v1\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
