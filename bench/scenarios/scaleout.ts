/**
 * Writes that grow with instances (issue #27): two instances of the service on one PostgreSQL and one Redis
 * against one instance, for PATCH /v1/pets/{id}, POST /v1/store/orders and POST /v1/pets. For each write, in
 * rounds: one instance under all the connections, then both instances with half the connections each (two
 * load clients at once), and so on, ending with one instance; a round's scale is (both instances' writes/s
 * together) ÷ (the mean of the one-instance rounds either side). The row judges the median scale of each
 * write; the bare baseline plays no part (the same client measures both sides).
 */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import type { Server } from '../../support/processes.js';
import { median, summarise, type Load, type RunResult, type Settings } from '../lib/load.js';
import { placeOrderLoad, startOrdersService, updatePetLoad, type OrdersService } from '../lib/orders.js';
import { defineScenario, Skip, type Context } from '../lib/scenario.js';

/**
 * Enough available pets (half of them) for every order the rounds place at a few thousand a second, plus the
 * pools wrk holds (bench/lib/wrk.ts); fewer for --quick, whose rounds are short.
 */
const petsFor = (settings: Settings): number => (settings.quick ? 100_000 : 400_000);
export const SCALE_TARGET = 1.6;

const WRITES = [
  { metric: 'scaleUpdatePet', label: 'PATCH' },
  { metric: 'scalePlaceOrder', label: 'placeOrder' },
  { metric: 'scaleCreatePet', label: 'POST' },
] as const;

/**
 * The three writes on one instance; `second` gives the PATCHes the other half of the connections' lists of
 * pets (each instance has half the connections, so the two never rename one pet).
 */
function loads(s: State, server: Server, second = false): Load[] {
  const auth = { authorization: `Bearer ${s.key}` };
  const patch = updatePetLoad(server.child.pid!, server.origin, auth, s.pets);
  const lists = patch.perClientRequests!;
  if (second)
    patch.perClientRequests = [...lists.slice(lists.length / 2), ...lists.slice(0, lists.length / 2)];
  return [
    patch,
    placeOrderLoad(s, server),
    {
      pid: server.child.pid!,
      url: server.origin,
      headers: { ...auth, 'content-type': 'application/json' },
      requests: [
        { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Scaled pet', categoryId: 3 }) },
      ],
    },
  ];
}

type State = OrdersService & { pets: number };

interface Scale {
  /** Median over the rounds of (two instances' writes/s ÷ mean of the one-instance rounds either side). */
  scale: number;
  scales: number[];
  oneRps: number;
  twoRps: number;
  /** Each instance's share of the two-instance rounds (median writes/s). */
  perInstance: [number, number];
  cpuUsOne?: number;
  cpuUsTwo?: number;
  failures: number;
}

async function measureScale(ctx: Context, one: Load, a: Load, b: Load): Promise<Scale> {
  const { warmupS, roundS, rounds, connections } = ctx.settings;
  const half = Math.floor(connections / 2);
  const both = (durationS: number): Promise<RunResult[]> =>
    Promise.all([ctx.run(a, durationS, half), ctx.run(b, durationS, connections - half)]);
  await ctx.run(one, warmupS);
  await both(warmupS);
  const ones = [await ctx.run(one, roundS)];
  const twos: RunResult[][] = [];
  const scales: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const two = await both(roundS);
    const after = await ctx.run(one, roundS);
    const before = ones.at(-1)!;
    twos.push(two);
    ones.push(after);
    scales.push((two[0]!.rps + two[1]!.rps) / ((before.rps + after.rps) / 2));
  }
  const o = summarise(ones);
  const [ta, tb] = [summarise(twos.map((t) => t[0]!)), summarise(twos.map((t) => t[1]!))];
  const cpu = twos.flat().every((r) => r.cpuS !== undefined)
    ? (twos.flat().reduce((sum, r) => sum + r.cpuS!, 0) * 1e6) /
      twos.flat().reduce((sum, r) => sum + r.requests, 0)
    : undefined;
  return {
    scale: median(scales),
    scales,
    oneRps: o.rps,
    twoRps: median(twos.map((t) => t[0]!.rps + t[1]!.rps)),
    perInstance: [ta.rps, tb.rps],
    cpuUsOne: o.cpuUs,
    cpuUsTwo: cpu,
    failures: o.non2xx + o.errors + ta.non2xx + ta.errors + tb.non2xx + tb.errors,
  };
}

export default defineScenario<State>({
  name: 'scaleout',
  label: 'writes/s of 2 instances on one PostgreSQL + Redis ÷ 1 instance (PATCH, placeOrder, POST)',
  order: 207,
  tags: ['scaleout', 'postgres'],
  usesSqlite: false,
  target: {
    bounds: WRITES.map((w) => ({ metric: w.metric, atLeast: SCALE_TARGET })),
    context: 'each write',
  },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    const pets = petsFor(ctx.settings);
    return { ...(await startOrdersService(ctx, 'postgres', pets, 2)), pets };
  },
  async measure(ctx, s) {
    const first = loads(s, s.server);
    const second = loads(s, s.others[0]!, true);
    const metrics: Record<string, number> = {};
    const notes: string[] = [];
    let failures = 0;
    for (const [i, write] of WRITES.entries()) {
      const m = await measureScale(ctx, first[i]!, first[i]!, second[i]!);
      metrics[write.metric] = m.scale;
      failures += m.failures;
      const cpu =
        m.cpuUsOne !== undefined && m.cpuUsTwo !== undefined
          ? `, cpu ${m.cpuUsOne.toFixed(0)} → ${m.cpuUsTwo.toFixed(0)} µs/write`
          : '';
      const line =
        `${write.label} ${m.scale.toFixed(2)}× [${m.scales.map((x) => x.toFixed(2)).join(' ')}]: ` +
        `1 instance ${m.oneRps.toFixed(0)}/s, 2 instances ${m.twoRps.toFixed(0)}/s ` +
        `(${m.perInstance.map((r) => r.toFixed(0)).join(' + ')})${cpu}` +
        (m.failures ? `, ${m.failures} non-2xx/errors` : '');
      ctx.log(`scaleout (${ctx.settings.client}): ${line}`);
      notes.push(line);
    }
    const lowest = Math.min(...Object.values(metrics));
    return {
      row: { value: `${lowest.toFixed(2)}× (lowest)`, note: notes.join('; ') },
      metrics,
      failures,
    };
  },
  teardown: (s) => s.cleanup(),
});
