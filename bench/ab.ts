/**
 * `npm run bench:ab -- --a old=../old-checkout:/usr/bin/node --b new=.`: the CPU one request costs on two builds
 * of the service (each a built checkout, each with the Node binary it runs on), measured in interleaved rounds
 * on the same machine at the same time.
 *
 * Why beside `npm run bench`: a before/after comparison of two whole bench runs puts half an hour between the
 * two figures of a row, and this shared 2-core machine drifts by ±20 % in that time (the same build measured
 * 72 and 87 µs for one row an hour apart). Here each round measures every build on the same row back to back,
 * in alternating order, and the figure is the service's total CPU (all its threads, /proc) over the total
 * requests wrk counted, over every round: drift hits both builds alike.
 *
 *   --a / --b NAME=DIR[:NODE]   a built checkout (dist/) and the node binary to run it (default: this one)
 *   --backend sqlite|postgres   postgres: a schema and a Redis prefix of its own per build (default sqlite)
 *   --rows list,deep,get,...    of ROWS below (default: all)
 *   --rounds N --seconds S      rounds of S seconds per row and build (default 6 × 3)
 *
 * Each build is set up through its own CLI (migrate, seed, keys create) and started with `npm start`'s Node
 * options read from its own package.json.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PG_URL, REDIS_URL, uniqueName } from '../support/services.js';
import { dropSchema, postgresUrl } from '../support/postgres.js';
import { deleteKeys } from '../support/redis.js';
import { cpuSeconds } from './lib/cpu.js';

const PETS = 5_000;
/** Available pets given an order before measuring, so the orders list has full pages. */
const ORDERS = 60;

interface Build {
  name: string;
  dir: string;
  node: string;
  env: Record<string, string>;
  child?: ChildProcess;
  origin?: string;
  auth?: string;
  urls: Record<string, string>;
  cleanup: () => Promise<void>;
}

interface Row {
  label: string;
  /** The URL for a build. */
  url: (b: Build) => string;
  /** Written rows: wrk's Lua script makes each request (PATCH_LUA, CREATE_LUA). */
  script?: 'patch' | 'create';
}

const ROWS: Record<string, Row> = {
  list: { label: 'GET /v1/pets?limit=20', url: (b) => `${b.origin}/v1/pets?limit=20` },
  deep: { label: 'GET /v1/pets?limit=20&cursor=… (page 21 of 100)', url: (b) => b.urls.deep! },
  get: { label: 'GET /v1/pets/{id}', url: (b) => `${b.origin}/v1/pets/1234` },
  list100: {
    label: 'GET /v1/pets?status=available&limit=100',
    url: (b) => `${b.origin}/v1/pets?status=available&limit=100`,
  },
  orders: { label: 'GET /v1/store/orders?limit=20', url: (b) => `${b.origin}/v1/store/orders?limit=20` },
  patch: { label: 'PATCH /v1/pets/{id} (a rename)', url: (b) => b.origin!, script: 'patch' },
  create: { label: 'POST /v1/pets', url: (b) => b.origin!, script: 'create' },
};

// Every PATCH a real rename of one of the seeded pets, spread over them, as the bench's updatePet row does.
const PATCH_LUA = `
local n = 0
function request()
  n = n + 1
  local id = 1 + ((n * 7919 + 13) % ${PETS})
  local body = '{"name":"ab ' .. n .. '"}'
  return wrk.format("PATCH", "/v1/pets/" .. id, nil, body)
end
`;

// The body of the bench's createPet row.
const CREATE_LUA = `
function request()
  return wrk.format("POST", "/v1/pets", nil, '{"name":"Bench pet","categoryId":3}')
end
`;

function parseBuild(spec: string): { name: string; dir: string; node: string } {
  const match = /^([\w.-]+)=([^:]+)(?::(.+))?$/.exec(spec);
  if (!match) throw new Error(`--a/--b: NAME=DIR[:NODE], not ${spec}`);
  return { name: match[1]!, dir: resolve(match[2]!), node: match[3] ?? process.execPath };
}

function cli(build: Build, ...args: string[]): string {
  return execFileSync(build.node, [join(build.dir, 'dist', 'cli.js'), ...args], {
    env: { PATH: process.env.PATH ?? '', ...build.env },
    encoding: 'utf8',
    cwd: build.dir,
    timeout: 300_000,
  });
}

async function start(build: Build): Promise<void> {
  cli(build, 'migrate');
  cli(build, 'seed', '--pets', String(PETS));
  const out = cli(
    build,
    ...['keys', 'create', '--account', 'ab', '--plan', 'enterprise'],
    ...['--per-minute', '1000000000', '--per-day', '1000000000', '--json'],
  );
  const key = (JSON.parse(out) as { key: string }).key;
  build.auth = `Bearer ${key}`;
  const pkg = JSON.parse(readFileSync(join(build.dir, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  const options = words.slice(1, words.indexOf('dist/cli.js'));
  const child = spawn(build.node, [...options, join(build.dir, 'dist', 'cli.js'), 'serve'], {
    // One account holds every order placed below, as the bench's own orders rows allow.
    env: {
      PATH: process.env.PATH ?? '',
      ...build.env,
      ...{ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_OPEN_ORDERS: '1000' },
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    cwd: build.dir,
  });
  build.child = child;
  build.origin = await new Promise<string>((resolveOrigin, reject) => {
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)\/v1\b/.exec(stderr);
      if (match) resolveOrigin(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${build.name} exited (${code}): ${stderr}`)));
  });
  const headers = { authorization: build.auth, 'content-type': 'application/json' };
  // The deep page: follow Link headers of pages of 100 for 20 pages, as a client paging would.
  let next = `${build.origin}/v1/pets?limit=100`;
  for (let page = 0; page < 20; page++) {
    const res = await fetch(next, { headers });
    await res.arrayBuffer();
    next = new URL(/<([^>]+)>/.exec(res.headers.get('link') ?? '')![1]!, build.origin).href;
  }
  const cursor = new URL(next).searchParams.get('cursor')!;
  build.urls.deep = `${build.origin}/v1/pets?limit=20&cursor=${cursor}`;
  const available = await fetch(`${build.origin}/v1/pets?status=available&limit=${ORDERS}`, { headers });
  const pets = (await available.json()) as { id: number }[];
  for (const { id } of pets) {
    const res = await fetch(`${build.origin}/v1/store/orders`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ petId: id }),
    });
    if (res.status !== 201) throw new Error(`${build.name}: an order for pet ${id} answered ${res.status}`);
    await res.arrayBuffer();
  }
}

/** One wrk run; the requests it counted. */
function wrk(build: Build, row: Row, seconds: number, scripts: Record<'patch' | 'create', string>): number {
  const args = ['-t1', '-c50', `-d${seconds}s`, '-H', `authorization: ${build.auth}`];
  if (row.script === 'patch') args.push('-H', 'content-type: application/merge-patch+json');
  if (row.script === 'create') args.push('-H', 'content-type: application/json');
  if (row.script) args.push('-s', scripts[row.script]);
  const out = execFileSync('wrk', [...args, row.url(build)], { encoding: 'utf8' });
  const requests = /(\d+) requests in/.exec(out);
  if (!requests) throw new Error(`wrk printed no count:\n${out}`);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (non2xx) throw new Error(`${build.name} ${row.label}: ${non2xx[1]} answers were not 2xx`);
  return Number(requests[1]);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      a: { type: 'string' },
      b: { type: 'string' },
      backend: { type: 'string', default: 'sqlite' },
      rows: { type: 'string', default: Object.keys(ROWS).join(',') },
      rounds: { type: 'string', default: '6' },
      seconds: { type: 'string', default: '3' },
    },
  });
  if (!values.a || !values.b) throw new Error('usage: bench/ab.ts --a NAME=DIR[:NODE] --b NAME=DIR[:NODE]');
  const rows = values.rows.split(',').map((name) => {
    if (!ROWS[name]) throw new Error(`unknown row ${name}; rows: ${Object.keys(ROWS).join(', ')}`);
    return ROWS[name];
  });
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const work = mkdtempSync(join(tmpdir(), 'pet-adoption-ab-'));
  const script = { patch: join(work, 'patch.lua'), create: join(work, 'create.lua') };
  writeFileSync(script.patch, PATCH_LUA);
  writeFileSync(script.create, CREATE_LUA);
  const builds = [values.a, values.b].map((spec): Build => {
    const { name, dir, node } = parseBuild(spec);
    if (values.backend === 'postgres') {
      const schema = uniqueName('ab');
      return {
        name,
        dir,
        node,
        urls: {},
        env: { DATABASE_URL: postgresUrl(schema), REDIS_URL, REDIS_PREFIX: `${schema}:` },
        cleanup: async () => {
          await dropSchema(schema);
          await deleteKeys(REDIS_URL, `${schema}:`);
        },
      };
    }
    return {
      name,
      dir,
      node,
      urls: {},
      env: { DATABASE_URL: `sqlite:${join(work, `${name}.db`)}` },
      cleanup: async () => {},
    };
  });
  try {
    for (const build of builds) {
      await start(build);
      const version = execFileSync(build.node, ['--version'], { encoding: 'utf8' }).trim();
      const where =
        values.backend === 'postgres' ? `PostgreSQL at ${PG_URL.split('@')[1]} + Redis` : 'SQLite';
      console.log(`${build.name}: ${build.dir} on Node ${version} (${where})`);
    }
    const cpu = new Map<string, number>();
    const requests = new Map<string, number>();
    for (const row of rows) for (const build of builds) wrk(build, row, 2, script);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const row of rows) {
        for (const build of order) {
          const pid = build.child!.pid!;
          const before = cpuSeconds(pid)!;
          const n = wrk(build, row, seconds, script);
          const key = `${row.label}\0${build.name}`;
          cpu.set(key, (cpu.get(key) ?? 0) + cpuSeconds(pid)! - before);
          requests.set(key, (requests.get(key) ?? 0) + n);
        }
      }
    }
    const [a, b] = builds as [Build, Build];
    console.log(`\n| row | ${a.name} µs/req | ${b.name} µs/req | ${b.name} ÷ ${a.name} |`);
    console.log('|---|---|---|---|');
    for (const row of rows) {
      const per = (build: Build) =>
        (cpu.get(`${row.label}\0${build.name}`)! * 1e6) / requests.get(`${row.label}\0${build.name}`)!;
      console.log(
        `| ${row.label} | ${per(a).toFixed(1)} | ${per(b).toFixed(1)} | ${(per(b) / per(a)).toFixed(2)} |`,
      );
    }
  } finally {
    for (const build of builds) build.child?.kill('SIGTERM');
    for (const build of builds) await build.cleanup().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
