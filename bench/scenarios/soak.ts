/**
 * Memory across a soak: GET /v1/pets?limit=20 spread over 10,000 accounts (each connection cycles through
 * its own 200 keys), RSS after the warm-up against RSS at the end (2 s means of 250 ms samples).
 */
import { SqliteDatabase } from '../../src/db/sqlite.js';
import { mintKey } from '../../src/modules/accounts/mint.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import type { Request, Settings } from '../lib/load.js';
import { summarise } from '../lib/load.js';
import { heapFigures } from '../lib/memory.js';
import { defineScenario } from '../lib/scenario.js';

const ACCOUNTS = 10_000;
const warmupS = (settings: Settings): number => (settings.quick ? 3 : 10);
const soakS = (settings: Settings): number => (settings.quick ? 10 : 60);
const FLAT_PERCENT = 10;

/** Accounts with one key each, straight through the storage (10,000 CLI runs would take minutes). */
async function createAccounts(dbPath: string, count: number): Promise<string[]> {
  const database = new SqliteDatabase(dbPath);
  const accounts = database.repository(accountRepository);
  const keys: string[] = [];
  try {
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const account = await accounts.upsertAccount(
        { name: `soak-${i}`, plan: 'enterprise', perMinute: 1_000_000_000, perDay: 1_000_000_000 },
        now,
      );
      keys.push((await mintKey(accounts, account.id, now)).key);
    }
  } finally {
    await database.close();
  }
  return keys;
}

export default defineScenario({
  name: 'soak',
  label: (settings) =>
    `memory: RSS across a ${soakS(settings)} s soak, ${ACCOUNTS.toLocaleString('en')} accounts`,
  order: 100,
  tags: ['memory'],
  usesSqlite: true,
  target: { bounds: [{ metric: 'driftPercent', within: FLAT_PERCENT }] },
  async setup(ctx) {
    const service = await ctx.sqlite();
    const t = Date.now();
    const keys = await createAccounts(service.dbPath, ACCOUNTS);
    ctx.log(
      `soak: created ${ACCOUNTS} accounts with one key each in ${((Date.now() - t) / 1000).toFixed(1)} s`,
    );
    const perClient = Math.ceil(keys.length / ctx.settings.connections);
    const perClientRequests: Request[][] = [];
    for (let c = 0; c < ctx.settings.connections; c++) {
      perClientRequests.push(
        keys.slice(c * perClient, (c + 1) * perClient).map((k) => ({
          method: 'GET',
          path: '/v1/pets?limit=20',
          headers: { authorization: `Bearer ${k}` },
        })),
      );
    }
    return { service, load: { pid: service.pid, url: service.origin, perClientRequests } };
  },
  async measure(ctx, { service, load }) {
    const [warm, soak] = [warmupS(ctx.settings), soakS(ctx.settings)];
    ctx.log(`soak: ${ACCOUNTS} accounts, ${warm} s warm-up then ${soak} s`);
    const w = await ctx.run(load, warm);
    const warmEnd = Date.now();
    const heapStart = await heapFigures(service.origin);
    const s = summarise([await ctx.run(load, soak)]);
    const soakEnd = Date.now();
    const heapEnd = await heapFigures(service.origin);
    const startMb = service.memory.meanMb(warmEnd - 2000, warmEnd);
    const endMb = service.memory.meanMb(soakEnd - 2000, soakEnd);
    const drift = (100 * (endMb - startMb)) / startMb;
    const sign = drift >= 0 ? '+' : '';
    ctx.log(
      `soak: ${s.rps.toFixed(0)} req/s, p99 ${s.p99.toFixed(2)} ms, RSS ${startMb.toFixed(1)} → ${endMb.toFixed(1)} MB (${sign}${drift.toFixed(1)} %)`,
    );
    ctx.log(`soak: heap (from /metrics) ${JSON.stringify(heapStart)} → ${JSON.stringify(heapEnd)}`);
    const bad = w.non2xx + w.errors + s.non2xx + s.errors;
    return {
      row: {
        p50: s.p50,
        p99: s.p99,
        cpuUs: s.cpuUs,
        value: `${startMb.toFixed(0)}→${endMb.toFixed(0)} MB (${sign}${drift.toFixed(1)} %)`,
        note: `${s.rps.toFixed(0)} req/s of GET /v1/pets?limit=20 spread over the accounts${bad ? `; ${bad} non-2xx/errors` : ''}`,
      },
      metrics: { driftPercent: drift },
      failures: bad,
      memory: {
        soakHeapStartMb: heapStart,
        soakHeapEndMb: heapEnd,
        soakStartMb: startMb,
        soakEndMb: endMb,
        soakDriftPercent: drift,
        soakRps: s.rps,
      },
      settings: { soakAccounts: ACCOUNTS, soakSeconds: soak },
    };
  },
});
