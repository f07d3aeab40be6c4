/**
 * The service as users run it (`npm start`'s command, info logging), set up through its own CLI, and the
 * baseline that replays one of its real responses. Processes are started and stopped with the same helpers
 * as the end-to-end tests (support/processes.ts).
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI, cli, serve, terminate, type Server } from '../../support/processes.js';
import { load, type Settings } from './load.js';
import { MemoryWatch } from './memory.js';

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PROFILE_DIR = join(BENCH_DIR, 'profiles');
export const logFile = (name: string): string => join(BENCH_DIR, `${name}.log`);
/** The shared SQLite database's size. */
export const SQLITE_PETS = 1_000_000;

/**
 * The Node options `npm start` gives the service (`node <options> dist/cli.js serve` in package.json: the
 * heap cap), read from package.json so the bench measures what users run.
 */
function startOptions(): string[] {
  const pkg = JSON.parse(readFileSync(join(BENCH_DIR, '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  const cli = words.indexOf('dist/cli.js');
  if (words[0] !== 'node' || cli < 0) throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return words.slice(1, cli);
}

/** Node arguments for the service: `npm start`'s, with a V8 CPU profile written on exit when profiling. */
export function serviceArgv(settings: Settings): string[] {
  const profile = settings.profile ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [];
  return [...startOptions(), ...profile, CLI, 'serve'];
}

/** A bench/*.ts script run with tsx (the reference servers). */
export function scriptArgv(script: string, ...args: string[]): string[] {
  return ['--import', 'tsx', join(BENCH_DIR, script), ...args];
}

/** Runs `pet-adoption <args>`; a non-zero exit is an error carrying its stderr. */
export async function runCli(
  env: Record<string, string>,
  args: string[],
  timeoutMs = 30_000,
): Promise<string> {
  const result = await cli(args, env, timeoutMs);
  if (result.code !== 0) {
    throw new Error(
      `pet-adoption ${args.join(' ')} failed (${result.code ?? result.signal}): ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}

/** An enterprise account with limits far above anything the benchmark sends, and one key for it. */
export async function createKey(env: Record<string, string>, account: string): Promise<string> {
  // keys create works on an existing database only; migrate creates it (and is a no-op once it exists).
  await runCli(env, ['migrate']);
  const out = await runCli(env, [
    ...['keys', 'create', '--account', account, '--plan', 'enterprise'],
    ...['--per-minute', '1000000000', '--per-day', '1000000000', '--json'],
  ]);
  return (JSON.parse(out.trim().split('\n').at(-1)!) as { key: string }).key;
}

export async function seed(env: Record<string, string>, pets: number): Promise<void> {
  await runCli(env, ['seed', '--pets', String(pets)], 15 * 60_000);
}

export interface SqliteService {
  server: Server;
  pid: number;
  /** http://127.0.0.1:PORT */
  origin: string;
  dbPath: string;
  /** The service's environment, for other processes on the same database. */
  env: Record<string, string>;
  key: string;
  auth: { authorization: string };
  memory: MemoryWatch;
  /** One real response of GET /v1/pets?limit=20 (what the baseline and the Fastify floor replay). */
  recordedFile: string;
}

export interface RecordedResponse {
  status: number;
  /** Header name/value pairs in the order the service sent them (without Date/Connection/Keep-Alive). */
  headers: [string, string][];
  /** Body bytes, base64. */
  body: string;
}

export async function recordResponse(url: string, key: string): Promise<RecordedResponse> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${body.toString()}`);
  const skip = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
  const headers: [string, string][] = [];
  res.headers.forEach((value, name) => {
    if (!skip.has(name)) headers.push([name, value]);
  });
  return { status: res.status, headers, body: body.toString('base64') };
}

/**
 * Seeding 1,000,000 pets takes minutes, and a before/after sitting runs the bench several times on code
 * whose schema and seeding did not change. So a seeded file is kept in bench/.cache (git-ignored), named by a
 * hash of what decides its content: the migrations, every seed step and the SQLite repositories they write
 * through. Any change to those seeds afresh; `rm -r bench/.cache` forces it.
 */
async function seededCopy(
  env: Record<string, string>,
  dbPath: string,
  log: (line: string) => void,
): Promise<void> {
  const cached = join(SEED_CACHE_DIR, `seed-${SQLITE_PETS}-${seedInputsHash()}.db`);
  if (existsSync(cached)) {
    copyFileSync(cached, dbPath);
    log(`copied the seeded file ${relative(process.cwd(), cached)}`);
    return;
  }
  const t = Date.now();
  await runCli(env, ['migrate']);
  await seed(env, SQLITE_PETS);
  log(`seeded ${SQLITE_PETS} pets in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  // The seed command closed the database, which checkpoints it: every row is in the main file.
  if (existsSync(`${dbPath}-wal`)) throw new Error(`${dbPath}-wal is left after seeding; not caching it`);
  mkdirSync(SEED_CACHE_DIR, { recursive: true });
  for (const name of readdirSync(SEED_CACHE_DIR)) {
    if (name.startsWith('seed-')) rmSync(join(SEED_CACHE_DIR, name), { force: true });
  }
  copyFileSync(dbPath, `${cached}.partial`);
  renameSync(`${cached}.partial`, cached);
}

const SEED_CACHE_DIR = join(BENCH_DIR, '.cache');

function seedInputsHash(): string {
  const src = join(BENCH_DIR, '..', 'src');
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (
        path.includes(`${join('db', 'migrations')}`) ||
        /seed|repository\.sqlite|index\.ts$/.test(entry.name)
      ) {
        files.push(path);
      }
    }
  };
  walk(src);
  const hash = createHash('sha256');
  for (const file of files.sort()) hash.update(relative(src, file)).update(readFileSync(file));
  return hash.digest('hex').slice(0, 16);
}

/** Seeds a fresh SQLite file in `dir` through the CLI, starts the service on it and warms it up. */
export async function startSqliteService(
  settings: Settings,
  dir: string,
  log: (line: string) => void,
): Promise<SqliteService> {
  const dbPath = join(dir, 'bench.db');
  // NODE_OPTIONS emptied: nothing from the developer's shell may change how the service runs.
  const env = { DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info', NODE_OPTIONS: '' };
  log(`setting up ${dbPath}`);
  await seededCopy(env, dbPath, log);
  const key = await createKey(env, 'bench');
  const server = await serve('service', env, { argv: serviceArgv(settings), logFile: logFile('service') });
  const pid = server.child.pid!;
  const memory = new MemoryWatch(pid);
  const auth = { authorization: `Bearer ${key}` };
  const listUrl = `${server.origin}/v1/pets?limit=20`;
  log(`service ${server.origin} (pid ${pid}); warming it up for ${settings.serviceWarmupS} s`);
  const half = settings.serviceWarmupS / 2;
  await load({ pid, url: listUrl, headers: auth }, half, settings.connections, settings.client);
  await load(
    { pid, url: `${server.origin}/v1/pets/1`, headers: auth },
    half,
    settings.connections,
    settings.client,
  );
  const recordedFile = join(dir, 'recorded.json');
  writeFileSync(recordedFile, JSON.stringify(await recordResponse(listUrl, key)));
  return { server, pid, origin: server.origin, dbPath, env, key, auth, memory, recordedFile };
}

export async function stopSqliteService(service: SqliteService): Promise<void> {
  service.memory.stop();
  await terminate(service.server);
}

/** The yardstick: bare node:http answering the recorded response byte for byte (bench/baseline-server.ts). */
export function startBaseline(service: SqliteService): Promise<Server> {
  return serve(
    'baseline',
    {},
    {
      argv: scriptArgv('baseline-server.ts', service.recordedFile),
      logFile: logFile('baseline'),
    },
  );
}

const LOG_KEEP_HEAD = 64 * 1024;
export const LOG_KEEP_TAIL = 8 * 1024 * 1024;

/**
 * A full run writes a few hundred MB of access log; keep its start (start-up lines) and end so the file
 * still shows what the service logged, without filling the disk run after run. Returns the size written.
 */
export function trimLog(file: string): number {
  if (!existsSync(file)) return 0;
  const size = statSync(file).size;
  if (size <= LOG_KEEP_HEAD + LOG_KEEP_TAIL) return size;
  const fd = openSync(file, 'r');
  const head = Buffer.alloc(LOG_KEEP_HEAD);
  const tail = Buffer.alloc(LOG_KEEP_TAIL);
  readSync(fd, head, 0, LOG_KEEP_HEAD, 0);
  readSync(fd, tail, 0, LOG_KEEP_TAIL, size - LOG_KEEP_TAIL);
  closeSync(fd);
  const headText = head.toString('utf8', 0, head.lastIndexOf(10) + 1);
  const tailText = tail.toString('utf8', tail.indexOf(10) + 1);
  const removed = size - Buffer.byteLength(headText) - Buffer.byteLength(tailText);
  writeFileSync(file, `${headText}[bench] … ${removed} bytes of per-request lines removed …\n${tailText}`);
  return size;
}
