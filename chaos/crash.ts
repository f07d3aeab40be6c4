/**
 * Crash durability: POSTs on keep-alive connections, `kill -9` mid-load, restart on the same database, then
 * look up every pet whose 201 arrived. Target: no acknowledged write lost, on SQLite (synchronous normal and
 * full) and PostgreSQL.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { serve, terminate, waitForExit, type Server } from '../support/processes.js';
import {
  createKey,
  NoAnswer,
  PeakRss,
  postgresEnv,
  request,
  row,
  sqliteEnv,
  type Cleanup,
  type ExperimentResult,
  type Settings,
} from './common.js';

const CONNECTIONS = 8;

interface Acked {
  id: number;
  name: string;
}

async function loadUntilKilled(server: Server, key: string, round: number, rss: PeakRss): Promise<Acked[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const acked: Acked[] = [];
  let dead = false;
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; !dead; i++) {
      const name = `crash ${round}-${w}-${i}`;
      try {
        const answer = await request(server.base, 'POST', '/pets', {
          agent,
          key,
          body: { name, categoryId: 1 + (i % 7) },
        });
        if (answer.status === 201) acked.push({ id: (JSON.parse(answer.text) as { id: number }).id, name });
      } catch (error) {
        if (!(error instanceof NoAnswer)) throw error;
        return; // The server is gone: nothing more can be acknowledged.
      }
    }
  };
  const workers = Promise.all(Array.from({ length: CONNECTIONS }, (_, w) => worker(w)));
  // Kill at a random moment once the load is flowing, so commits are caught at every stage.
  while (acked.length < 50) await sleep(5);
  await sleep(150 + Math.random() * 500);
  rss.sample();
  server.child.kill('SIGKILL');
  await waitForExit(server.child);
  await workers;
  dead = true;
  agent.destroy();
  return acked;
}

/** How many of `acked` the restarted server cannot find (404, or another pet under that id). */
async function countMissing(server: Server, key: string, acked: Acked[]): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let missing = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < acked.length) {
        const pet = acked[next++]!;
        const answer = await request(server.base, 'GET', `/pets/${pet.id}`, { agent, key });
        if (answer.status === 404) missing++;
        else if (answer.status !== 200)
          throw new Error(`GET /pets/${pet.id}: ${answer.status} ${answer.text}`);
        else if ((JSON.parse(answer.text) as { name: string }).name !== pet.name) missing++;
      }
    }),
  );
  agent.destroy();
  return missing;
}

export async function crash(settings: Settings, cleanup: Cleanup): Promise<ExperimentResult> {
  const rss = new PeakRss();
  const variants: Array<{ label: string; env: () => Promise<Record<string, string>> }> = [
    { label: 'SQLite normal', env: async () => sqliteEnv(cleanup, 'normal') },
    { label: 'SQLite full', env: async () => sqliteEnv(cleanup, 'full') },
  ];
  if (settings.external) variants.push({ label: 'PostgreSQL', env: () => postgresEnv(cleanup, 'crash') });
  const rows = [];
  const details: Record<string, unknown> = {};
  for (const variant of variants) {
    const env = await variant.env();
    const key = await createKey(env);
    let server = await serve(`crash-${variant.label}`, env);
    rss.watch(server.child);
    let acknowledged = 0;
    let lost = 0;
    const perRound: Array<{ acknowledged: number; lost: number }> = [];
    for (let round = 0; round < settings.crashRounds; round++) {
      const acked = await loadUntilKilled(server, key, round, rss);
      server = await serve(`crash-${variant.label}-${round}`, env);
      rss.watch(server.child);
      const missing = await countMissing(server, key, acked);
      acknowledged += acked.length;
      lost += missing;
      perRound.push({ acknowledged: acked.length, lost: missing });
    }
    await terminate(server);
    details[variant.label] = perRound;
    rows.push(
      row(
        `${variant.label}: acknowledged POSTs lost over ${settings.crashRounds} kill -9 (of ${acknowledged})`,
        lost,
        '0',
        lost === 0,
      ),
    );
  }
  if (!settings.external) rows.push(row('PostgreSQL', 'skipped', 'PostgreSQL unreachable', undefined));
  return { name: 'crash durability', rows, details, peakRssMb: rss.stop() };
}
