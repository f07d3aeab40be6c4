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
 *   npm run bench -- --client both      each scenario with wrk (judged) and with autocannon (reported);
 *                                       --client wrk | autocannon: one client (default: wrk where installed)
 *
 * Every throughput is a ratio to the baseline (same response bytes and headers, no work), measured with the
 * same load client in rounds interleaved with each scenario's, because this 2-core machine is shared and
 * absolute numbers drift. Exits 1 when a target is missed or a scenario fails, 2 on an unknown scenario name
 * or client.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CLI, killAll, serve, terminate, type Server } from '../support/processes.js';
import {
  defaultClient,
  Interleaved,
  load,
  LOAD_CLIENTS,
  settingsFor,
  type LoadClient,
  type Settings,
} from './lib/load.js';
import { wrkInstalled } from './lib/wrk.js';
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
    /** wrk, autocannon, or both (one pass per client, wrk's rows judged); default wrk where installed. */
    client: { type: 'string' },
  },
});
const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

class UsageError extends Error {}

/** The load clients of this run, the judging one first (wrk whenever it is one of them). */
function clientsOf(option: string | undefined): LoadClient[] {
  const clients: LoadClient[] =
    option === undefined
      ? [defaultClient()]
      : option === 'both'
        ? ['wrk', 'autocannon']
        : LOAD_CLIENTS.includes(option as LoadClient)
          ? [option as LoadClient]
          : [];
  if (clients.length === 0) throw new UsageError(`--client ${option}: one of wrk, autocannon, both`);
  if (clients.includes('wrk') && !wrkInstalled()) {
    throw new UsageError(
      'wrk is not installed: `sudo apt-get install -y wrk` (Debian/Ubuntu), or --client autocannon',
    );
  }
  return clients;
}

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
  const clients = clientsOf(opts.client);
  const judge = clients[0]!;
  const settingsOf = new Map<LoadClient, Settings>(
    clients.map((c) => [c, settingsFor(opts.quick, opts.profile, c)]),
  );
  const settings = settingsOf.get(judge)!;
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
  /** By `<client>:<scenario>`: each pass measures a scenario once, whoever asks for it. */
  const outcomes = new Map<string, Promise<Outcome>>();
  let sqlite: Promise<SqliteService> | undefined;
  let baseline: Server | undefined;
  const benches = new Map<LoadClient, Interleaved>();

  const contexts = new Map<LoadClient, Context>(
    clients.map((client) => {
      const own = settingsOf.get(client)!;
      const ctx: Context = {
        settings: own,
        log,
        sqlite: () => (sqlite ??= startSqliteService(settings, tmp, log)),
        serve: (name, logName, env, argv) =>
          serve(name, env, { argv: argv ?? serviceArgv(own), logFile: logFile(logName) }),
        outcome: (name) => {
          const scenario = all.find((s) => s.name === name);
          if (!scenario) return Promise.reject(new Error(`no scenario named ${name}`));
          return runScenario(scenario, client);
        },
        measure: (label, target) => benches.get(client)!.measure(label, target),
        run: (target, durationS, connections) =>
          load(target, durationS, connections ?? own.connections, client),
      };
      return [client, ctx];
    }),
  );

  /** Setup, measurement, teardown and the row of one scenario with one client, once per run. */
  function runScenario(scenario: Scenario, client: LoadClient): Promise<Outcome> {
    const key = `${client}:${scenario.name}`;
    let running = outcomes.get(key);
    if (!running) {
      running = measureScenario(scenario, client);
      outcomes.set(key, running);
    }
    return running;
  }

  async function measureScenario(scenario: Scenario, client: LoadClient): Promise<Outcome> {
    const ctx = contexts.get(scenario.ownClient ? judge : client)!;
    const label = labelOf(scenario, ctx.settings);
    const own = scenario.ownClient;
    const row: Row = {
      name: scenario.name,
      ...(own === 'none' ? {} : { client: own ?? client }),
      scenario: label,
      target: targetText(scenario.target),
    };
    // With two clients only the judging client's rows are judged; the other's are reported beside them.
    const judged = scenario.target !== undefined && (client === judge || scenario.ownClient !== undefined);
    if (clients.length > 1 && !scenario.ownClient) log(`${scenario.name} with ${client}`);
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
      if (judged) row.pass = targetMet(scenario.target!, outcome);
      else if (scenario.target) row.target = `${row.target} (judged with ${judge})`;
      if (client === judge) {
        Object.assign(memory, outcome.memory);
        Object.assign(extraSettings, outcome.settings);
      }
      rows.push(row);
      return outcome;
    } catch (error) {
      const message = (error as Error).message;
      if (error instanceof Skip) {
        log(`skipping ${scenario.name}: ${message}`);
        rows.push({ ...row, note: `skipped: ${message}` });
      } else {
        log(`${scenario.name} (${client}) failed: ${(error as Error).stack ?? message}`);
        rows.push({ ...row, pass: judged ? false : undefined, note: `failed: ${message}` });
      }
      throw error;
    }
  }

  try {
    // The baseline replays one real response of the shared service, so the service always starts first.
    const service = await contexts.get(judge)!.sqlite();
    baseline = await startBaseline(service);
    for (const client of clients) {
      const target = { pid: baseline.child.pid!, url: `${baseline.origin}/v1/pets?limit=20` };
      benches.set(client, new Interleaved(target, settingsOf.get(client)!, log));
    }
    log(
      `baseline ${baseline.origin}; load client ${clients.join(' then ')}` +
        `${clients.length > 1 ? ` (${judge} judged)` : ''}; ${settings.connections} connections; ` +
        `per scenario ${settings.warmupS} s warm-up, ` +
        `then ${settings.rounds} × (${settings.roundS} s scenario + ${settings.roundS} s baseline); ` +
        `scenarios: ${selected.map((s) => s.name).join(', ')}`,
    );
    for (const [i, scenario] of selected.entries()) {
      // Stop the shared service once nothing left needs it, so it does not compete for the CPU.
      if (sqlite && !selected.slice(i).some((s) => s.usesSqlite)) {
        await stopSqliteService(await sqlite);
        sqlite = undefined;
      }
      // Scenarios with a tool of their own (overload: wrk) or no load (a memory figure) run once.
      for (const client of scenario.ownClient ? [judge] : clients) {
        await runScenario(scenario, client).catch(() => undefined); // recorded as a FAIL or skipped row
      }
    }
  } finally {
    if (sqlite) await stopSqliteService(await sqlite).catch(() => undefined);
    if (baseline) await terminate(baseline).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }

  const baselineRps = new Map(clients.map((c) => [c, benches.get(c)?.baselineRuns.map((r) => r.rps) ?? []]));
  const rounds: string[] = [];
  for (const client of [...clients].reverse()) {
    const bench = benches.get(client);
    const rps = baselineRps.get(client)!;
    if (!bench || rps.length === 0) continue;
    const b = bench.summary();
    rows.unshift({
      client,
      scenario: `baseline: bare node:http, same bytes (${rps.length} rounds)`,
      ...{ rps: b.rps, ratio: 1, p50: b.p50, p99: b.p99, cpuUs: b.cpuUs, target: '—' },
    });
    const spread = (100 * (Math.max(...rps) - Math.min(...rps))) / Math.min(...rps);
    rounds.unshift(
      `baseline rounds (${client}): ${rps.map((r) => r.toFixed(0)).join(' ')} req/s (min..max spread ${spread.toFixed(0)} %).\n`,
    );
  }
  process.stdout.write(
    `\n${table(rows)}\n\n${rounds.join('')}` +
      `ratio = median over ${settings.rounds} rounds of (scenario req/s ÷ mean of the baseline rounds either side, ` +
      `same load client); req/s = median round; p50/p99 over all rounds' responses; cpu = server CPU time per response.\n`,
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
    /** Load clients of the run; every row's `client` says which measured it, and only `judgedBy`'s are judged. */
    clients,
    judgedBy: judge,
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
    /** The judging client's baseline rounds; every client's in baselineRoundsRpsByClient. */
    baselineRoundsRps: baselineRps.get(judge) ?? [],
    baselineRoundsRpsByClient: Object.fromEntries(baselineRps),
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
  // Shared services (the catalogue's) live until the run ends; their pipes would keep it from exiting.
  async (code) => {
    await killAll();
    process.exitCode = code;
  },
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
