/**
 * The benchmark's yardstick: a bare node:http server that answers every request with one recorded response
 * of the real service (status, headers and body bytes), and does nothing else. bench/run.ts starts it as a
 * child process, like the service, so both pay the same process and socket costs.
 *
 *   node --import tsx bench/baseline-server.ts <recorded.json> <port>
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

export interface RecordedResponse {
  status: number;
  /** Header name/value pairs in the order the service sent them (without Date/Connection/Keep-Alive). */
  headers: [string, string][];
  /** Body bytes, base64. */
  body: string;
}

const [file, portText] = process.argv.slice(2);
if (!file || !portText) {
  process.stderr.write('usage: baseline-server.ts <recorded.json> <port>\n');
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
server.listen(Number(portText), '127.0.0.1', () => {
  process.stderr.write(`baseline listening on 127.0.0.1:${portText}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
