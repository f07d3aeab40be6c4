/** The table the benchmark prints and the rows it writes to bench/results.json. */
import type { LoadClient } from './load.js';
import type { RowFigures } from './scenario.js';

export interface Row extends RowFigures {
  /** The scenario's name (`npm run bench -- <name>`); absent on the baseline row. */
  name?: string;
  /** The load client that measured the row; absent on rows without a load (a memory figure). */
  client?: LoadClient;
  scenario: string;
  target: string;
  /** Absent when the row is reported, not judged (or was skipped). */
  pass?: boolean;
}

function fmt(n: number | undefined, digits = 0): string {
  return n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits);
}

function result(r: Row): string {
  if (r.pass !== undefined) return r.pass ? 'PASS' : 'FAIL';
  if (r.note?.startsWith('skipped')) return 'skipped';
  return r.target === '—' ? '' : 'report';
}

export function table(rows: Row[]): string {
  const header = [
    'scenario',
    'client',
    'req/s',
    'ratio',
    'p50 ms',
    'p99 ms',
    'cpu µs/req',
    'target',
    'result',
  ];
  const body = rows.map((r) => [
    r.scenario,
    r.client ?? '',
    r.value ?? fmt(r.rps),
    fmt(r.ratio, 2),
    fmt(r.p50, 2),
    fmt(r.p99, 2),
    fmt(r.cpuUs),
    r.target,
    result(r),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 || i === 1 || i === 7 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const out = [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)];
  const notes = rows
    .filter((r) => r.note)
    .map((r) => `- ${r.scenario}${r.client ? ` (${r.client})` : ''}: ${r.note}`);
  return [...out, ...(notes.length ? ['', ...notes] : [])].join('\n');
}
