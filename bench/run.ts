/**
 * `npm run bench`: measures the built service the way users run it, against a bare node:http baseline
 * measured in the same run, and prints one table (also written to bench/results.json). The scenarios are
 * the files in bench/scenarios/ (see bench/README.md for how to add one).
 *
 *   npm run bench                       every scenario (a few minutes)
 *   npm run bench -- list getPet        only these (by name or tag; plus what they build on)
 *   npm run bench -- =postgres          the scenario of that name only (postgres is also a tag)
 *   npm run bench -- --quick            smoke run: short rounds, short soak
 *   npm run bench -- --profile          also write V8 CPU profiles of the service to bench/profiles/
 *   npm run bench -- --no-postgres      leave out the scenarios tagged postgres
 *
 * Every throughput is a ratio to the baseline (same response bytes and headers, no work), measured in
 * rounds interleaved with each scenario's, because this 2-core machine is shared and absolute numbers
 * drift. Exits 1 when a target is missed or a scenario fails, 2 on an unknown scenario name.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, killAll, serve, terminate, type Server } from '../support/processes.js';
import { Interleaved, load, settingsFor } from './lib/load.js';
import { table, type Row } from './lib/report.js';
import {
  fromMeasured,
  labelOf,
  Skip,
  targetMet,
  targetText,
  type Context,
  type Outcome,
  type Scenario,
} from './lib/scenario.js';
import {
  BENCH_DIR,
  LOG_KEEP_TAIL,
  logFile,
  PROFILE_DIR,
  serviceArgv,
  SQLITE_PETS,
  startBaseline,
  startSqliteService,
  stopSqliteService,
  trimLog,
  type SqliteService,
} from './lib/service.js';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    /** The old spelling of the positional names: `--only list,getPet`. */
    only: { type: 'string' },
    'no-postgres': { type: 'boolean', default: false },
  },
});
const settings = settingsFor(opts.quick, opts.profile);
const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

class UsageError extends Error {}

/** Every bench/scenarios/<name>.ts, in run order. */
async function discover(): Promise<Scenario[]> {
  const dir = join(BENCH_DIR, 'scenarios');
  const found: Scenario[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const scenario = ((await import(pathToFileURL(join(dir, file)).href)) as { default?: Scenario }).default;
    if (!scenario || `${scenario.name}.ts` !== file) {
      throw new Error(
        `bench/scenarios/${file} must export default defineScenario({ name: '${file.slice(0, -3)}', … })`,
      );
    }
    found.push(scenario);
  }
  return found.sort((a, b) => a.order - b.order);
}

function select(all: Scenario[], words: string[]): Scenario[] {
  for (const word of words) {
    if (!all.some((s) => s.name === word.replace(/^=/, '') || s.tags?.includes(word))) {
      const tags = [...new Set(all.flatMap((s) => s.tags ?? []))];
      throw new UsageError(
        `unknown scenario "${word}"; scenarios: ${all.map((s) => s.name).join(', ')}; tags: ${tags.join(', ')}`,
      );
    }
  }
  return all.filter(
    (s) =>
      (words.length === 0 ||
        words.some((w) => s.name === w.replace(/^=/, '') || (!w.startsWith('=') && s.tags?.includes(w)))) &&
      !(opts['no-postgres'] && s.tags?.includes('postgres')),
  );
}

async function main(): Promise<number> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` (npm run bench does)');
  const words = [
    ...positionals,
    ...(opts.only
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ?? []),
  ];
  const all = await discover();
  const selected = select(all, words);
  const started = Date.now();
  for (const file of readdirSync(BENCH_DIR).filter((f) => f.endsWith('.log')))
    writeFileSync(join(BENCH_DIR, file), '');
  if (settings.profile) mkdirSync(PROFILE_DIR, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), 'pet-adoption-bench-'));

  const rows: Row[] = [];
  const memory: Record<string, unknown> = {};
  const extraSettings: Record<string, unknown> = {};
  const outcomes = new Map<string, Promise<Outcome>>();
  let sqlite: Promise<SqliteService> | undefined;
  let baseline: Server | undefined;
  let bench: Interleaved | undefined;

  const ctx: Context = {
    settings,
    log,
    sqlite: () => (sqlite ??= startSqliteService(settings, tmp, log)),
    serve: (name, logName, env, argv) =>
      serve(name, env, { argv: argv ?? serviceArgv(settings), logFile: logFile(logName) }),
    outcome: (name) => {
      const scenario = all.find((s) => s.name === name);
      if (!scenario) return Promise.reject(new Error(`no scenario named ${name}`));
      return runScenario(scenario);
    },
    measure: (label, target) => bench!.measure(label, target),
    run: (target, durationS) => load(target, durationS, settings.connections),
  };

  /** Setup, measurement, teardown and the row of one scenario, once per run whoever asks for it. */
  function runScenario(scenario: Scenario): Promise<Outcome> {
    let running = outcomes.get(scenario.name);
    if (!running) {
      running = measureScenario(scenario);
      outcomes.set(scenario.name, running);
    }
    return running;
  }

  async function measureScenario(scenario: Scenario): Promise<Outcome> {
    const label = labelOf(scenario, settings);
    const row: Row = { name: scenario.name, scenario: label, target: targetText(scenario.target) };
    try {
      const state = await scenario.setup(ctx);
      let outcome: Outcome;
      try {
        outcome = scenario.measure
          ? await scenario.measure(ctx, state)
          : fromMeasured(await ctx.measure(label, scenario.load!(state)));
      } finally {
        await scenario.teardown?.(state);
      }
      const note = [outcome.row.note, scenario.note].filter(Boolean).join('; ');
      Object.assign(row, outcome.row, note ? { note } : {});
      if (scenario.target) row.pass = targetMet(scenario.target, outcome);
      Object.assign(memory, outcome.memory);
      Object.assign(extraSettings, outcome.settings);
      rows.push(row);
      return outcome;
    } catch (error) {
      const message = (error as Error).message;
      if (error instanceof Skip) {
        log(`skipping ${scenario.name}: ${message}`);
        rows.push({ ...row, note: `skipped: ${message}` });
      } else {
        log(`${scenario.name} failed: ${(error as Error).stack ?? message}`);
        rows.push({ ...row, pass: false, note: `failed: ${message}` });
      }
      throw error;
    }
  }

  try {
    // The baseline replays one real response of the shared service, so the service always starts first.
    const service = await ctx.sqlite();
    baseline = await startBaseline(service);
    bench = new Interleaved(
      { pid: baseline.child.pid!, url: `${baseline.origin}/v1/pets?limit=20` },
      settings,
      log,
    );
    log(
      `baseline ${baseline.origin}; ${settings.connections} connections; per scenario ${settings.warmupS} s warm-up, ` +
        `then ${settings.rounds} × (${settings.roundS} s scenario + ${settings.roundS} s baseline); ` +
        `scenarios: ${selected.map((s) => s.name).join(', ')}`,
    );
    for (const [i, scenario] of selected.entries()) {
      // Stop the shared service once nothing left needs it, so it does not compete for the CPU.
      if (sqlite && !selected.slice(i).some((s) => s.usesSqlite)) {
        await stopSqliteService(await sqlite);
        sqlite = undefined;
      }
      await runScenario(scenario).catch(() => undefined); // recorded as a FAIL or skipped row
    }
  } finally {
    if (sqlite) await stopSqliteService(await sqlite).catch(() => undefined);
    if (baseline) await terminate(baseline).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }

  const baselineRps = bench?.baselineRuns.map((r) => r.rps) ?? [];
  if (bench && baselineRps.length > 0) {
    const b = bench.summary();
    rows.unshift({
      scenario: `baseline: bare node:http, same bytes (${baselineRps.length} rounds)`,
      ...{ rps: b.rps, ratio: 1, p50: b.p50, p99: b.p99, cpuUs: b.cpuUs, target: '—' },
    });
  }
  const spread = (100 * (Math.max(...baselineRps) - Math.min(...baselineRps))) / Math.min(...baselineRps);
  const rounds = baselineRps.length
    ? `baseline rounds: ${baselineRps.map((r) => r.toFixed(0)).join(' ')} req/s (min..max spread ${spread.toFixed(0)} %).\n`
    : '';
  process.stdout.write(
    `\n${table(rows)}\n\n${rounds}` +
      `ratio = median over ${settings.rounds} rounds of (scenario req/s ÷ mean of the baseline rounds either side); ` +
      `req/s = median round; p50/p99 over all rounds' responses; cpu = server CPU time per response.\n`,
  );
  const serviceLog = logFile('service');
  const logSize = trimLog(serviceLog);
  process.stdout.write(
    `service log: ${serviceLog} (${(logSize / 1e6).toFixed(0)} MB written, one info line per request; ` +
      `kept its start and last ${LOG_KEEP_TAIL / 2 ** 20} MiB)\n`,
  );

  const results = {
    date: new Date().toISOString(),
    quick: settings.quick,
    scenarios: selected.map((s) => s.name),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    settings: {
      connections: settings.connections,
      warmupSeconds: settings.warmupS,
      rounds: settings.rounds,
      roundSeconds: settings.roundS,
      pets: SQLITE_PETS,
      ...extraSettings,
    },
    baselineRoundsRps: baselineRps,
    rows,
    memory,
    elapsedSeconds: Math.round((Date.now() - started) / 1000),
  };
  // Only a full run replaces bench/results.json; smoke and partial runs must not overwrite it.
  const partial = settings.quick || words.length > 0 || opts['no-postgres'];
  const resultsFile = partial ? 'results.partial.json' : 'results.json';
  writeFileSync(join(BENCH_DIR, resultsFile), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`results written to bench/${resultsFile} (${results.elapsedSeconds} s)\n`);
  const missed = rows.filter((r) => r.pass === false).map((r) => r.scenario);
  if (missed.length) process.stderr.write(`bench: target missed or scenario failed: ${missed.join('; ')}\n`);
  return missed.length ? 1 : 0;
}

// Children must not outlive the benchmark, whichever way it ends.
process.on('exit', () => void killAll());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void killAll().finally(() => process.exit(130)));
}

main().then(
  (code) => (process.exitCode = code),
  async (error: unknown) => {
    process.stderr.write(
      error instanceof UsageError
        ? `bench: ${error.message}\n`
        : `bench failed: ${(error as Error).stack ?? String(error)}\n`,
    );
    await killAll();
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);
