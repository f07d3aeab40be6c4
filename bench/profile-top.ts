/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time, and the
 * same grouped by package (node_modules/<name>, node: internals, the service's own dist/ files).
 *
 *   node --import tsx bench/profile-top.ts bench/profiles/<file>.cpuprofile [--top 40] [--filter text] [--inclusive] [--callees name]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  where: string;
  selfMs: number;
  percent: number;
}

function location(frame: CallFrame): string {
  if (!frame.url) return '(native)';
  const url = frame.url.replace(/^file:\/\//, '');
  const short = url.includes('node_modules/')
    ? url.slice(url.lastIndexOf('node_modules/') + 'node_modules/'.length)
    : url.replace(/^.*\/(dist|src|bench)\//, '$1/');
  return `${short}:${frame.lineNumber + 1}`;
}

function groupOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : '(native/V8 builtins)';
  if (url.startsWith('node:')) return 'node: internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.includes('/dist/')) return 'service (dist/)';
  return url;
}

/** Self time per function and per group, in milliseconds, sorted descending. */
/**
 * What the functions whose name or location contains `needle` spend their time on: inclusive time of each
 * direct callee, summed over every call site.
 */
export function callees(profile: CpuProfile, needle: string): ProfileLine[] {
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) byId.set(node.id, node);
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const inclusive = (node: ProfileNode): number =>
    (selfUs.get(node.id) ?? 0) + (node.children ?? []).reduce((a, c) => a + inclusive(byId.get(c)!), 0);
  const out = new Map<string, ProfileLine>();
  const add = (name: string, where: string, us: number): void => {
    const key = `${name}@${where}`;
    const line = out.get(key) ?? { name, where, selfMs: 0, percent: 0 };
    line.selfMs += us / 1000;
    out.set(key, line);
  };
  let total = 0;
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    if (!`${frame.functionName} ${location(frame)}`.includes(needle)) continue;
    total += inclusive(node);
    add('(self)', '', selfUs.get(node.id) ?? 0);
    for (const c of node.children ?? []) {
      const child = byId.get(c)!;
      add(child.callFrame.functionName || '(anonymous)', location(child.callFrame), inclusive(child));
    }
  }
  return [...out.values()]
    .map((l) => ({ ...l, percent: total ? (100 * l.selfMs * 1000) / total : 0 }))
    .sort((a, b) => b.selfMs - a.selfMs);
}

export function summarise(profile: CpuProfile): {
  total: number;
  functions: ProfileLine[];
  groups: ProfileLine[];
  inclusive: ProfileLine[];
} {
  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) byId.set(node.id, node);
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0) / 1000;
  const fn = new Map<string, ProfileLine>();
  const groups = new Map<string, ProfileLine>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const name = frame.functionName || '(anonymous)';
    const where = location(frame);
    const key = `${name}@${where}`;
    const line = fn.get(key) ?? { name, where, selfMs: 0, percent: 0 };
    line.selfMs += us / 1000;
    fn.set(key, line);
    const group = groupOf(frame);
    const g = groups.get(group) ?? { name: group, where: '', selfMs: 0, percent: 0 };
    g.selfMs += us / 1000;
    groups.set(group, g);
  }
  // Inclusive time: a node's self time plus its descendants', summed per function (a function on the stack
  // twice through recursion is counted once per path, which is good enough for finding hot subtrees).
  const inclusiveUs = new Map<number, number>();
  const visit = (node: ProfileNode): number => {
    let sum = selfUs.get(node.id) ?? 0;
    for (const child of node.children ?? []) sum += visit(byId.get(child)!);
    inclusiveUs.set(node.id, sum);
    return sum;
  };
  visit(profile.nodes[0]!);
  const incl = new Map<string, ProfileLine>();
  for (const node of profile.nodes) {
    const frame = node.callFrame;
    const name = frame.functionName || '(anonymous)';
    const where = location(frame);
    const key = `${name}@${where}`;
    const line = incl.get(key) ?? { name, where, selfMs: 0, percent: 0 };
    line.selfMs += (inclusiveUs.get(node.id) ?? 0) / 1000;
    incl.set(key, line);
  }
  const finish = (lines: Iterable<ProfileLine>): ProfileLine[] =>
    [...lines].map((l) => ({ ...l, percent: (100 * l.selfMs) / total })).sort((a, b) => b.selfMs - a.selfMs);
  return {
    total,
    functions: finish(fn.values()),
    groups: finish(groups.values()),
    inclusive: finish(incl.values()),
  };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      top: { type: 'string', default: '40' },
      filter: { type: 'string' },
      inclusive: { type: 'boolean', default: false },
      callees: { type: 'string' },
    },
  });
  const file = positionals[0];
  if (!file) {
    process.stderr.write('usage: profile-top.ts <file.cpuprofile> [--top N] [--filter text]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const { total, functions, groups, inclusive } = summarise(profile);
  const top = Number(values.top);
  const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
  const fmt = (l: ProfileLine): string =>
    `${l.selfMs.toFixed(0).padStart(8)} ms ${l.percent.toFixed(1).padStart(5)} %  ${pad(l.name, 40)} ${l.where}`;
  process.stdout.write(`profile ${file}: ${total.toFixed(0)} ms sampled\n\nself time by package:\n`);
  for (const g of groups.slice(0, 25)) process.stdout.write(`${fmt(g)}\n`);
  if (values.callees) {
    process.stdout.write(`\ncallees of "${values.callees}" (inclusive ms, % of its time):\n`);
    for (const l of callees(profile, values.callees).slice(0, top)) process.stdout.write(`${fmt(l)}\n`);
    return;
  }
  const list = values.inclusive ? inclusive : functions;
  process.stdout.write(`\ntop ${top} functions by ${values.inclusive ? 'inclusive' : 'self'} time:\n`);
  const shown = values.filter ? list.filter((l) => `${l.name} ${l.where}`.includes(values.filter!)) : list;
  for (const l of shown.slice(0, top)) process.stdout.write(`${fmt(l)}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
