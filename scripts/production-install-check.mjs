#!/usr/bin/env node
/**
 * Proves the production install from a clean copy, by running the Dockerfile's own stages on this machine
 * (no container engine needed): each stage gets a directory of its own, its COPY lines copy from the
 * repository's files (`git ls-files`, as a build context) or from an earlier stage's directory, and its RUN
 * lines run there as written. The runtime stage's RUN lines need root and its base image (creating the
 * `node` user's data directory), so they are reported, not run. Then the runtime directory, which holds
 * production dependencies and the built output only, must:
 *   - hold no TypeScript or other dev tool;
 *   - let `npm start`'s prestart decide there is nothing to build;
 *   - serve with the image's CMD (PATH without any node_modules/.bin): /healthz 200, the image's
 *     HEALTHCHECK command exits 0, and a /v1 call with a key made by the CLI answers 200.
 *
 * Usage: node scripts/production-install-check.mjs [--keep] [--runtime=DIR]   (CI: .ci/run). Takes
 * minutes: two `npm ci`.
 * Dependency-free on purpose: it must run where nothing is installed yet.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import process from 'node:process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath, URL } from 'node:url';

/* global fetch, AbortSignal -- Node 20's own, like the image's HEALTHCHECK. */

const root = fileURLToPath(new URL('..', import.meta.url));
const keep = process.argv.includes('--keep');
const work = mkdtempSync(join(tmpdir(), 'pet-adoption-production-'));
const log = (line) => process.stdout.write(`production-install-check: ${line}\n`);

/** The Dockerfile as stages of instructions, continuation lines joined, comments dropped. */
function parseDockerfile(text) {
  const joined = text.replace(/\\\r?\n/g, ' ');
  const stages = [];
  for (const raw of joined.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [, instruction, rest] = /^(\S+)\s*(.*)$/.exec(line);
    const keyword = instruction.toUpperCase();
    if (keyword === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      stages.push({ image, name, instructions: [] });
    } else {
      stages.at(-1).instructions.push({ keyword, args: rest.replace(/\s+/g, ' ') });
    }
  }
  return stages;
}

/** The build context: the repository's files, as `git ls-files` names them (ignored files stay out). */
function context() {
  const dir = join(work, 'context');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(root, file)));
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(root, file), join(dir, file));
  }
  return dir;
}

/** COPY [--from=stage] [--chown=…] src… dest, relative to the stage's WORKDIR (its directory here). */
function copy(args, stageDir, dirs, contextDir) {
  const words = args.split(' ');
  const from = words.find((word) => word.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((word) => !word.startsWith('--'));
  const dest = paths.pop();
  const sourceRoot = from === undefined ? contextDir : dirs.get(from);
  if (!sourceRoot) throw new Error(`COPY --from=${from}: no such stage`);
  // Paths inside a stage are absolute under WORKDIR /app or relative to it.
  const inApp = (path) => (path.startsWith('/') ? posix.relative('/app', path) || '.' : path);
  for (const path of paths) {
    const source = join(sourceRoot, from === undefined ? path : inApp(path));
    const target = join(stageDir, inApp(dest));
    const intoDirectory = dest.endsWith('/') || paths.length > 1;
    if (statSync(source).isDirectory()) cpSync(source, target, { recursive: true, verbatimSymlinks: true });
    else {
      mkdirSync(intoDirectory ? target : dirname(target), { recursive: true });
      cpSync(source, intoDirectory ? join(target, posix.basename(path)) : target);
    }
  }
}

function runStages(stages) {
  const contextDir = context();
  const dirs = new Map();
  const last = stages.at(-1);
  for (const stage of stages) {
    const dir = join(work, stage.name);
    mkdirSync(dir);
    dirs.set(stage.name, dir);
    for (const { keyword, args } of stage.instructions) {
      if (keyword === 'WORKDIR' && args !== '/app')
        throw new Error(`WORKDIR ${args}: this check expects /app`);
      if (keyword === 'COPY') copy(args, dir, dirs, contextDir);
      if (keyword === 'RUN') {
        if (stage === last) {
          log(`[${stage.name}] not run (needs root and the base image): ${args}`);
          continue;
        }
        log(`[${stage.name}] RUN ${args}`);
        execFileSync('sh', ['-c', args], { cwd: dir, stdio: 'inherit' });
      }
    }
  }
  return dirs.get(last.name);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function jsonArray(stage, keyword) {
  const found = stage.instructions.find((instruction) => instruction.keyword === keyword);
  if (!found) throw new Error(`the runtime stage has no ${keyword}`);
  const match = /\[.*\]$/.exec(found.args);
  if (!match) throw new Error(`${keyword} must use the JSON (exec) form`);
  return JSON.parse(match[0]);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
  log(`ok: ${message}`);
}

async function main() {
  const stages = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  const runtime = stages.at(-1);
  // --runtime=DIR: check a runtime directory kept (--keep) by an earlier run, without rebuilding it.
  const reuse = process.argv.find((arg) => arg.startsWith('--runtime='))?.slice('--runtime='.length);
  const dir = reuse ?? runStages(stages);

  for (const tool of ['typescript', 'tsx', 'esbuild', 'eslint', 'prettier', '.bin/tsc']) {
    check(!existsSync(join(dir, 'node_modules', tool)), `no ${tool} in the runtime's node_modules`);
  }
  check(!existsSync(join(dir, 'src')), 'no sources in the runtime');

  const port = await freePort();
  const env = {
    // Only node's own directory: no node_modules/.bin, no global dev tools by accident.
    PATH: [dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
    HOME: process.env.HOME ?? work,
    ...Object.fromEntries(
      runtime.instructions
        .filter(({ keyword }) => keyword === 'ENV')
        .flatMap(({ args }) => [...args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])),
    ),
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: `sqlite:${join(dir, 'data', 'pet-adoption.db')}`,
    LOG_LEVEL: 'warn',
  };
  mkdirSync(join(dir, 'data'), { recursive: true });

  const prestart = execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], {
    cwd: dir,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  check(prestart === '', "npm start's prestart builds nothing (no sources)");

  const [command, ...args] = jsonArray(runtime, 'CMD');
  const service = spawn(command === 'node' ? process.execPath : command, args, {
    cwd: dir,
    env,
    stdio: 'inherit',
  });
  const exited = new Promise((resolve) => service.once('exit', resolve));
  try {
    const origin = `http://127.0.0.1:${port}`;
    let health;
    for (let attempt = 0; attempt < 600 && service.exitCode === null; attempt++) {
      health = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      if (health) break;
      await delay(100);
    }
    check(health?.status === 200, `the image's CMD serves: GET /healthz ${health?.status}`);

    // As the engine runs it: each attempt killed after --timeout, unhealthy after --retries failures.
    const healthcheck = runtime.instructions.find(({ keyword }) => keyword === 'HEALTHCHECK').args;
    const timeout = Number(/--timeout=(\d+)s/.exec(healthcheck)?.[1] ?? 30) * 1000;
    const retries = Number(/--retries=(\d+)/.exec(healthcheck)?.[1] ?? 3);
    const [probe, ...probeArgs] = jsonArray(runtime, 'HEALTHCHECK');
    let healthy = false;
    for (let attempt = 1; attempt <= retries && !healthy; attempt++) {
      try {
        execFileSync(probe === 'node' ? process.execPath : probe, probeArgs, { cwd: dir, env, timeout });
        healthy = true;
      } catch (error) {
        log(`HEALTHCHECK attempt ${attempt} failed: ${error instanceof Error ? error.message : error}`);
      }
    }
    check(healthy, "the image's HEALTHCHECK command exits 0");

    const created = execFileSync(
      process.execPath,
      ['dist/cli.js', 'keys', 'create', '--account', 'production-check', '--json'],
      { cwd: dir, env, encoding: 'utf8' },
    );
    const { key } = JSON.parse(created);
    const pets = await fetch(`${origin}/v1/pets`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(10_000),
    });
    check(pets.status === 200, `GET /v1/pets with a key made by the CLI: ${pets.status}`);
  } finally {
    service.kill('SIGTERM');
    await exited;
  }
}

try {
  await main();
  log('passed');
} catch (error) {
  process.stderr.write(
    `production-install-check: FAILED: ${error instanceof Error ? error.message : error}\n`,
  );
  process.exitCode = 1;
} finally {
  if (keep) log(`kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
