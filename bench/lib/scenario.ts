/**
 * What a benchmark scenario is. One file in bench/scenarios/ per scenario, its default export made with
 * `defineScenario`; bench/run.ts finds the files itself, so adding a scenario is adding a file.
 */
import type { Server } from '../../support/processes.js';
import type { Load, LoadClient, Measured, RunResult, Settings } from './load.js';
import type { SqliteService } from './service.js';

/** A bound on one of the figures a scenario reports; `within` is a bound on the absolute value. */
export interface Bound {
  metric: string;
  atLeast?: number;
  atMost?: number;
  within?: number;
}

export interface Target {
  bounds: Bound[];
  /** Said after the bounds in the table, e.g. the data size the bound holds for. */
  context?: string;
}

/** The table row a scenario fills (the runner adds its label, target and result). */
export interface RowFigures {
  rps?: number;
  ratio?: number;
  /** Per-round ratios (each against the baseline rounds either side). */
  ratios?: number[];
  p50?: number;
  p99?: number;
  /** Server CPU time per response (µs): a noise-resistant cost figure, since it does not depend on who else runs. */
  cpuUs?: number;
  /** Shown in the req/s column by rows that are not a throughput (a cost quotient, a memory figure). */
  value?: string;
  note?: string;
}

export interface Outcome {
  row: RowFigures;
  /** The figures the target's bounds name. */
  metrics: Record<string, number>;
  /** Non-2xx responses and connection errors: any fails the scenario's target. */
  failures: number;
  /** The interleaved measurement, when the scenario is one (other scenarios build on it, e.g. depth). */
  measured?: Measured;
  /** Merged into results.json's `memory` and `settings`. */
  memory?: Record<string, unknown>;
  settings?: Record<string, unknown>;
}

export interface Context {
  settings: Settings;
  log(line: string): void;
  /** The shared SQLite service (1,000,000 pets, an enterprise key), started once per run and warmed up. */
  sqlite(): Promise<SqliteService>;
  /** A server other than the shared one (a reference server, the service on another backend), started with
   * `--cpu-prof` when profiling and its stdout appended to bench/<logName>.log. */
  serve(name: string, logName: string, env: Record<string, string>, argv?: string[]): Promise<Server>;
  /** Another scenario's outcome: measured now if this run has not measured it yet. */
  outcome(name: string): Promise<Outcome>;
  /** A load measured in rounds interleaved with the baseline. */
  measure(label: string, load: Load): Promise<Measured>;
  /** One plain run (no baseline rounds), e.g. a soak; `connections` defaults to the settings'. */
  run(load: Load, durationS: number, connections?: number): Promise<RunResult>;
}

/** Thrown by a setup that cannot run here (a server unreachable): the row says skipped, not failed. */
export class Skip extends Error {}

export interface Scenario<S = unknown> {
  /** `npm run bench -- <name>`; the file is bench/scenarios/<name>.ts. */
  name: string;
  /** The table row's label (a function when it depends on the settings, e.g. a soak's length). */
  label: string | ((settings: Settings) => string);
  /** Scenarios run in this order (ascending), whatever order they are named in. */
  order: number;
  /** Also selected by these words (e.g. `reference`, `postgres`). */
  tags?: readonly string[];
  /** Whether the shared SQLite service must be running for it (it is stopped once nothing left needs it). */
  usesSqlite: boolean;
  /** Absent: the row is reported, not judged. */
  target?: Target;
  /**
   * Set when the scenario does not measure with the run's load client(s): the client it always uses (overload
   * drives wrk itself) or 'none' (no load of its own, e.g. a memory figure). It then runs once per run, not
   * once per client.
   */
  ownClient?: LoadClient | 'none';
  note?: string;
  /** Starts what it needs (servers, data, keys). */
  setup(ctx: Context): Promise<S>;
  /** The load to measure interleaved with the baseline; or give `measure` instead. */
  load?(state: S): Load;
  /** For scenarios that are not one interleaved load (a quotient of two others, a soak, a memory figure). */
  measure?(ctx: Context, state: S): Promise<Outcome>;
  teardown?(state: S): Promise<void>;
}

export function labelOf(scenario: Scenario, settings: Settings): string {
  return typeof scenario.label === 'function' ? scenario.label(settings) : scenario.label;
}

/** Keeps the state type of setup, load, measure and teardown in step. */
export function defineScenario<S>(scenario: Scenario<S>): Scenario<S> {
  return scenario;
}

export function fromMeasured(m: Measured): Outcome {
  const failures = m.non2xx + m.errors;
  return {
    row: {
      rps: m.rps,
      ratio: m.ratio,
      ratios: m.ratios,
      p50: m.p50,
      p99: m.p99,
      cpuUs: m.cpuUs,
      ...(failures ? { note: `${m.non2xx} non-2xx responses, ${m.errors} errors` } : {}),
    },
    metrics: { ratio: m.ratio, p99: m.p99, ...(m.cpuUs === undefined ? {} : { cpuUs: m.cpuUs }) },
    failures,
    measured: m,
  };
}

/** How a bound on a known metric reads in the table; others read `<metric> ≤ <value>`. */
const SHOW: Record<string, { prefix?: string; unit?: string; digits?: number }> = {
  ratio: { digits: 2 },
  p99: { prefix: 'p99 ', unit: ' ms' },
  cost: { unit: '×' },
  driftPercent: { unit: ' %' },
  peakRssMb: { unit: ' MB' },
};

export function targetText(target: Target | undefined): string {
  if (!target) return 'report';
  const parts = target.bounds.map((b) => {
    const show = SHOW[b.metric] ?? { prefix: `${b.metric} ` };
    const n = (v: number): string => (show.digits === undefined ? String(v) : v.toFixed(show.digits));
    const unit = show.unit ?? '';
    if (b.within !== undefined) return `${show.prefix ?? ''}±${n(b.within)}${unit}`;
    const ops = [
      ...(b.atLeast !== undefined ? [`≥ ${n(b.atLeast)}${unit}`] : []),
      ...(b.atMost !== undefined ? [`≤ ${n(b.atMost)}${unit}`] : []),
    ];
    return `${show.prefix ?? ''}${ops.join(' and ')}`;
  });
  return `${parts.join(', ')}${target.context ? ` (${target.context})` : ''}`;
}

/** Met when nothing failed and every bound holds; a figure the scenario did not report misses its bound. */
export function targetMet(target: Target, outcome: Outcome): boolean {
  if (outcome.failures > 0) return false;
  return target.bounds.every((b) => {
    const v = outcome.metrics[b.metric];
    if (v === undefined || Number.isNaN(v)) return false;
    return (
      (b.atLeast === undefined || v >= b.atLeast) &&
      (b.atMost === undefined || v <= b.atMost) &&
      (b.within === undefined || Math.abs(v) <= b.within)
    );
  });
}
