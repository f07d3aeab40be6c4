/**
 * A reference point, not the service: a bare Fastify route answering the baseline's recorded response (same
 * status, headers and body bytes) with no work at all. Against the node:http baseline it shows what the
 * framework itself costs per request, so the rest of the service's cost can be attributed.
 *
 *   PORT=0 node --import tsx bench/floor-server.ts <recorded.json>
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import type { RecordedResponse } from './lib/service.js';

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: PORT=0 floor-server.ts <recorded.json>\n');
  process.exit(2);
}
const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedResponse;
const body = Buffer.from(recorded.body, 'base64');
const headers = Object.fromEntries(recorded.headers.filter(([name]) => name !== 'content-length'));

const app = Fastify();
app.get('/v1/pets', (_request, reply) => reply.code(recorded.status).headers(headers).send(body));
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stderr.write(`fastify floor listening on ${address}/v1\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
