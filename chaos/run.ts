/**
 * `npm run chaos`: faults and abuse against the built server (`node dist/cli.js serve`), each figure printed
 * beside its target, the whole run written to chaos/results.json. Not part of `npm test` or CI: it takes a
 * few minutes and its figures are measurements, not assertions. See docs/reliability.md.
 *
 *   npm run chaos -- [--only crash,restart,outages,malformed,slow] [--rounds 3] [--stops 10]
 *                    [--requests 5000] [--seed N] [--out chaos/results.json]
 *
 * Every child process is killed, and every temp dir, PostgreSQL schema and Redis key removed, at the end,
 * whether the run succeeded, failed or was interrupted (Ctrl-C).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { externalServicesAvailable } from '../support/services.js';
import { CLI, killAll, ROOT } from '../support/processes.js';
import { Cleanup, type ExperimentResult, type Settings } from './common.js';
import { crash } from './crash.js';
import { malformed } from './malformed.js';
import { outages } from './outages.js';
import { restart } from './restart.js';
import { slow } from './slow.js';

const EXPERIMENTS: Record<string, (settings: Settings, cleanup: Cleanup) => Promise<ExperimentResult>> = {
  crash,
  restart,
  outages,
  malformed,
  slow,
};

function positive(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new Error(`--${flag} must be a whole number`);
  return Number(value);
}

function printTable(results: ExperimentResult[]): void {
  const lines: string[][] = [['experiment', 'metric', 'figure', 'target', '']];
  for (const result of results) {
    if (result.error) lines.push([result.name, 'FAILED TO RUN', result.error.split('\n')[0]!, '', 'MISSED']);
    for (const r of result.rows) {
      lines.push([
        result.name,
        r.metric,
        r.figure,
        r.target,
        r.met === undefined ? '' : r.met ? 'met' : 'MISSED',
      ]);
    }
    if (result.peakRssMb !== undefined)
      lines.push([result.name, 'peak server RSS', `${result.peakRssMb} MB`, '', '']);
  }
  const widths = lines[0]!.map((_, c) => Math.max(...lines.map((l) => l[c]!.length)));
  for (const [i, line] of lines.entries()) {
    console.log(line.map((cell, c) => cell.padEnd(widths[c]!)).join(' | '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      rounds: { type: 'string' },
      stops: { type: 'string' },
      requests: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
    },
  });
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm run chaos does)`);
  const names = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(EXPERIMENTS);
  for (const name of names) if (!EXPERIMENTS[name]) throw new Error(`unknown experiment "${name}"`);
  const settings: Settings = {
    crashRounds: positive(values.rounds, 'rounds', 3),
    stops: positive(values.stops, 'stops', 10),
    malformedRequests: positive(values.requests, 'requests', 5000),
    seed: positive(values.seed, 'seed', Math.floor(Math.random() * 2 ** 31)),
    external: await externalServicesAvailable(),
  };
  console.log(`chaos: ${names.join(', ')}; seed ${settings.seed}; ${JSON.stringify(settings)}`);

  const cleanup = new Cleanup();
  cleanup.add('kill every server', killAll);
  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) return;
    interrupted = true;
    console.error('chaos: interrupted; cleaning up');
    void cleanup.runAll().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const results: ExperimentResult[] = [];
  const started = performance.now();
  try {
    for (const name of names) {
      const at = performance.now();
      console.log(`chaos: ${name} …`);
      let result: ExperimentResult;
      try {
        result = await EXPERIMENTS[name]!(settings, cleanup);
      } catch (error) {
        result = { name, rows: [], details: {}, error: (error as Error).stack ?? String(error) };
        console.error(`chaos: ${name} failed: ${result.error}`);
      }
      // Servers an experiment left behind (after a failure) must not disturb the next one.
      await killAll();
      result.seconds = Math.round((performance.now() - at) / 1000);
      results.push(result);
      console.log(`chaos: ${name} done in ${result.seconds} s`);
    }
  } finally {
    await cleanup.runAll();
  }

  printTable(results);
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    // Not a checkout: no commit to name.
  }
  const out = values.out ?? join(ROOT, 'chaos', 'results.json');
  const missed = results.some((r) => r.error || r.rows.some((row) => row.met === false));
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        commit,
        node: process.version,
        seconds: Math.round((performance.now() - started) / 1000),
        settings,
        allTargetsMet: !missed,
        experiments: results,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`chaos: wrote ${out}; ${missed ? 'some targets MISSED' : 'every target met'}`);
  // Figures, not a gate: the exit code says only whether the harness itself ran.
  return results.some((r) => r.error) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    void killAll().finally(() => process.exit(2));
  },
);
