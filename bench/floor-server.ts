/**
 * A reference point, not the service: a bare Fastify route answering the baseline's recorded response (same
 * status, headers and body bytes) with no work at all. Against the node:http baseline it shows what the
 * framework itself costs per request, so the rest of the service's cost can be attributed.
 *
 *   node --import tsx bench/floor-server.ts <recorded.json> <port>
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import type { RecordedResponse } from './baseline-server.js';

const [file, portText] = process.argv.slice(2);
if (!file || !portText) {
  process.stderr.write('usage: floor-server.ts <recorded.json> <port>\n');
  process.exit(2);
}
const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedResponse;
const body = Buffer.from(recorded.body, 'base64');
const headers = Object.fromEntries(recorded.headers.filter(([name]) => name !== 'content-length'));

const app = Fastify();
app.get('/v1/pets', (_request, reply) => reply.code(recorded.status).headers(headers).send(body));
await app.listen({ port: Number(portText), host: '127.0.0.1' });
process.stderr.write(`fastify floor listening on 127.0.0.1:${portText}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
