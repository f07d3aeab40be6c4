/**
 * The storefront example, started by `npm run storefront`: a page an adopter would see, built on the SDK's
 * browser bundle and nothing else. This file owns a tiny static server for the page and starts the built
 * service beside it, allowing the page's origin through CORS_ORIGINS, exactly as a shop on its own domain
 * would call the API.
 *
 * Until its setup has ended, the site answers "starting…" (site.ts), so a page opened early waits.
 *
 * DEMO ONLY: on start it creates a key for the account `storefront-demo` with the CLI (read-only scopes)
 * and hands it to the page in /config.js, so anyone who can open the page can read the catalogue with it.
 * A real shop keeps keys on its server side. An empty database is seeded with demo pets first.
 *
 * Environment: STOREFRONT_PORT (8080; 0 picks a free one), DATABASE_URL (default
 * `sqlite:./data/storefront.db`, a database of its own), STOREFRONT_SEED_PETS (300). The service's other
 * variables (REDIS_URL…) pass through unchanged.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { applyActions } from './apply.js';
import { applicationsApi } from './applications-api.js';
import { startSite, TYPES } from './site.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const SDK = join(ROOT, 'packages', 'client', 'dist', 'index.js');

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Runs `pet-adoption …` and returns its stdout; a failure stops the example with the CLI's own message. */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`pet-adoption ${args.join(' ')} failed: ${stderr.trim()}`);
  return stdout;
}

/** Starts `pet-adoption serve` on a free port and resolves with its base URL (…/v1) once it listens. */
async function serveApi(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+\/v1)\b/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}): ${stderr.trim()}`)));
  });
  return { child, base };
}

async function main(): Promise<void> {
  const port = Number(process.env.STOREFRONT_PORT ?? 8080);
  const seedPets = Number(process.env.STOREFRONT_SEED_PETS ?? 300);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: process.env.DATABASE_URL ?? 'sqlite:./data/storefront.db',
  };

  // The page's origin must be known before the service starts: it is what CORS_ORIGINS allows. Until the
  // setup below ends, the site answers with a "starting…" page.
  const site = await startSite(HERE, ['index.html', 'app.js', 'apply-form.js', 'style.css'], port);
  const origin = site.origin;
  log(`Starting the storefront at ${origin}/ (it answers "starting…" until it is ready)`);

  const bundle = await build({
    entryPoints: [SDK],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'PetAdoption',
    write: false,
    logLevel: 'silent',
  });

  await cli(['migrate'], env);
  const created = JSON.parse(
    await cli(['keys', 'create', '--account', 'storefront-demo', '--scopes', 'pets:read', '--json'], env),
  ) as { key: string };
  // The shop's key for applications stays in this process: the page posts to this server, never to the API.
  const writer = JSON.parse(
    await cli(
      ['keys', 'create', '--account', 'storefront-demo', '--scopes', 'applications:write', '--json'],
      env,
    ),
  ) as { key: string };
  const api = await serveApi({ ...env, PORT: '0', HOST: '127.0.0.1', CORS_ORIGINS: origin });
  const stop = () => {
    api.child.kill('SIGTERM');
    site.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  api.child.once('exit', () => site.close());

  const probe = await fetch(`${api.base}/pets?limit=1`, {
    headers: { authorization: `Bearer ${created.key}` },
  });
  if (!probe.ok) throw new Error(`the service answered ${probe.status} to the demo key`);
  if (((await probe.json()) as unknown[]).length === 0 && seedPets > 0) {
    log(`An empty database: adding ${seedPets} demo pets with profiles and photos…`);
    await cli(['seed', '--pets', String(seedPets)], env);
  }

  site.ready(
    {
      '/sdk.js': { type: TYPES['.js']!, body: bundle.outputFiles[0]!.text },
      '/config.js': {
        type: TYPES['.js']!,
        // Demo only: a read-only key in a page is readable by whoever opens it.
        body: `window.STOREFRONT = ${JSON.stringify({ apiBase: api.base, apiKey: created.key })};\n`,
      },
    },
    applyActions(applicationsApi(api.base, writer.key), origin),
  );
  log(`API: ${api.base} (demo key for account storefront-demo, scope pets:read)`);
  // Last, and alone on its line: what to open (a test waits for it).
  log(`Storefront: ${origin}/`);
}

main().catch((error: unknown) => {
  log(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
