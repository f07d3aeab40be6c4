/**
 * A reference point, not the service: the minimal Fastify route the issue compares against, reading 20 rows
 * from SQLite per request with no authentication, rate limiting, logging, metrics or validation. bench/run.ts
 * measures it in the same run, so the service's ratio can be read against what the bare stack reaches.
 *
 *   PORT=0 node --import tsx bench/minimal-server.ts <sqlite file>
 */
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const [file] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: PORT=0 minimal-server.ts <sqlite file>\n');
  process.exit(2);
}
const db = new Database(file, { readonly: true });
// Written the obvious way: one prepared statement, the page size bound as a parameter.
const page = db.prepare(
  'SELECT id, name, category_id AS categoryId, status FROM pets WHERE id > ? ORDER BY id LIMIT ?',
);
const app = Fastify();
app.get('/v1/pets', async () => page.all(0, 20));
const address = await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stderr.write(`minimal reference listening on ${address}/v1\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
