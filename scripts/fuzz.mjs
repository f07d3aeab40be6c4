/**
 * `npm run fuzz`: the property-based suites (test/fuzz*.test.ts) with a random seed and more runs than
 * `npm test` gives them (which runs them with a fixed seed). The seed is printed first, so a failure
 * reproduces with `FUZZ_SEED=<seed> npm run fuzz`; FUZZ_RUNS sets the runs per property (default 3000).
 */
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readdirSync } from 'node:fs';
import process from 'node:process';

const seed = process.env.FUZZ_SEED ?? String(randomInt(0, 2 ** 31 - 1));
const runs = process.env.FUZZ_RUNS ?? '3000';
const files = readdirSync('test')
  .filter((file) => /^fuzz.*\.test\.ts$/.test(file))
  .sort()
  .map((file) => `test/${file}`);
process.stdout.write(`fuzz: FUZZ_SEED=${seed} FUZZ_RUNS=${runs}, ${files.join(' ')}\n`);
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], {
  stdio: 'inherit',
  env: { ...process.env, FUZZ_SEED: seed, FUZZ_RUNS: runs },
});
if (result.status !== 0)
  process.stdout.write(`fuzz: failed; reproduce with FUZZ_SEED=${seed} npm run fuzz\n`);
process.exit(result.status ?? 1);
