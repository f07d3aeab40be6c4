/**
 * The SDK's example (packages/client/examples/adopt.ts) run as the client README says, against the built
 * server (`pet-adoption serve`) with a key from `pet-adoption keys create`: it must adopt a pet end to end.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sqliteMemory } from './helpers.js';
import {
  cli,
  environmentFor,
  killAll,
  ROOT,
  serve,
  type Environment,
  type Server,
} from '../support/processes.js';

let environment: Environment;
let server: Server;

before(async () => {
  environment = await environmentFor(sqliteMemory);
  server = await serve('example', environment.env);
});
after(async () => {
  await killAll();
  await environment.cleanup();
});

test('examples/adopt.ts adopts a pet: created, listed, ordered, approved, delivered, sold', async () => {
  const created = await cli(['keys', 'create', '--account', 'example-store'], environment.env);
  assert.equal(created.code, 0, created.stderr);
  const key = created.stdout.trim().split('\n').at(-1)!;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'packages/client/examples/adopt.ts')],
    {
      cwd: ROOT,
      env: { ...process.env, PET_ADOPTION_API_KEY: key, PET_ADOPTION_URL: server.origin },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.equal(code, 0, stderr);
  assert.match(stdout, /created pet (\d+) \(Biscuit\), available/);
  assert.match(stdout, /is among the available pets/);
  assert.match(stdout, /placed order \d+ for pet \d+: placed/);
  assert.match(stdout, /approved order \d+: approved/);
  assert.match(stdout, /delivered order \d+: delivered/);
  assert.match(stdout, /is now sold: adopted/);
  assert.match(stdout, /inventory: \{"available":0,"pending":0,"sold":1\}/);
});
