/**
 * Restarts under keep-alive load: SIGTERM, then a replacement. On SQLite one instance restarts on the same
 * port (clients retry refused connections); on PostgreSQL two instances roll, the other one taking over.
 * Busy load: connections as fast as they go. Paced load: each connection sends one request every 50–200 ms,
 * so connections sit idle between requests, which is when a server that cuts idle connections loses some.
 * Counted: requests sent on an accepted connection that got no HTTP answer (reset, EPIPE, socket hang up),
 * and the POSTs among them. A refused connect is not counted: nothing was sent, the client retries.
 * Target: 0 over every stop.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { serve, terminate, type Server } from '../support/processes.js';
import {
  createKey,
  NoAnswer,
  PeakRss,
  postgresEnv,
  request,
  row,
  sqliteEnv,
  zero,
  type Cleanup,
  type ExperimentResult,
  type Row,
  type Settings,
} from './common.js';

const CONNECTIONS = 8;
/** Short, so ten stops take seconds; the variable exists once the drain is built (ignored before). */
const DRAIN_SECONDS = '1';

interface Lost {
  stop: number;
  method: string;
  name: string | undefined;
  code: string;
  reused: boolean;
}

class Load {
  readonly lost: Lost[] = [];
  sent = 0;
  serverErrors = 0;
  refused = 0;
  stop = 0;
  private stopped = false;
  private readonly workers: Promise<void>;

  constructor(
    private readonly bases: string[],
    private readonly key: string,
    private readonly paced: boolean,
  ) {
    this.workers = Promise.all(Array.from({ length: CONNECTIONS }, (_, w) => this.worker(w))).then(() => {});
  }

  async end(): Promise<void> {
    this.stopped = true;
    await this.workers;
  }

  private async worker(w: number): Promise<void> {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let at = w;
    for (let i = 0; !this.stopped; i++) {
      const post = i % 2 === 0;
      const name = post ? `restart ${w}-${i}` : undefined;
      for (;;) {
        const base = this.bases[at % this.bases.length]!;
        try {
          this.sent++;
          const answer = await request(base, post ? 'POST' : 'GET', post ? '/pets' : '/pets?limit=5', {
            agent,
            key: this.key,
            body: post ? { name, categoryId: 1 } : undefined,
          });
          if (answer.status >= 500) this.serverErrors++;
          break;
        } catch (error) {
          if (!(error instanceof NoAnswer)) throw error;
          if (error.sent) {
            this.lost.push({
              stop: this.stop,
              method: post ? 'POST' : 'GET',
              name,
              code: error.code,
              reused: error.reused,
            });
            break;
          }
          // Refused: never reached a server. Try the other instance (or the same port again, restarting).
          this.sent--;
          this.refused++;
          at++;
          await sleep(10);
        }
      }
      if (this.paced) await sleep(50 + Math.random() * 150);
    }
    agent.destroy();
  }
}

/** Names of every pet, following `Link: rel="next"`. */
async function allNames(base: string, key: string): Promise<Set<string>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const names = new Set<string>();
  let path: string | undefined = '/pets?limit=100';
  while (path !== undefined) {
    const answer = await request(base, 'GET', path, { agent, key });
    if (answer.status !== 200) throw new Error(`GET ${path}: ${answer.status} ${answer.text}`);
    for (const pet of JSON.parse(answer.text) as Array<{ name: string }>) names.add(pet.name);
    const link = answer.headers.link;
    path = /<\/v1([^>]+)>;\s*rel="next"/.exec(Array.isArray(link) ? link.join(',') : (link ?? ''))?.[1];
  }
  agent.destroy();
  return names;
}

async function run(
  label: string,
  mode: 'busy' | 'paced',
  env: Record<string, string>,
  instances: 1 | 2,
  settings: Settings,
  rss: PeakRss,
): Promise<{ rows: Row[]; details: Record<string, unknown> }> {
  const key = await createKey(env);
  const servers: Server[] = [];
  for (let i = 0; i < instances; i++) {
    servers.push(await serve(`restart-${label}-${mode}-${i}`, env));
    rss.watch(servers[i]!.child);
  }
  const bases = servers.map((s) => s.base);
  const load = new Load(bases, key, mode === 'paced');
  const shutdownMs: number[] = [];
  const badExits: string[] = [];
  try {
    for (let stop = 0; stop < settings.stops; stop++) {
      await sleep(400 + Math.random() * 400);
      load.stop = stop;
      const slot = stop % instances;
      const victim = servers[slot]!;
      const port = new URL(victim.base).port;
      rss.sample();
      const exit = await terminate(victim);
      shutdownMs.push(exit.ms);
      if (exit.code !== 0) badExits.push(`stop ${stop}: exit ${exit.code ?? exit.signal}`);
      // One instance comes back on its port; of two, the replacement gets a new one, as a new machine would.
      const next = await serve(
        `restart-${label}-${mode}-${stop}`,
        instances === 1 ? { ...env, PORT: port } : env,
      );
      rss.watch(next.child);
      servers[slot] = next;
      bases[slot] = next.base;
    }
    await sleep(300);
  } finally {
    await load.end();
  }
  const names = await allNames(servers[0]!.base, key);
  for (const server of servers) await terminate(server);
  const lostPosts = load.lost.filter((l) => l.method === 'POST');
  const executed = lostPosts.filter((l) => names.has(l.name!)).length;
  const perStop = Array.from(
    { length: settings.stops },
    (_, s) => load.lost.filter((l) => l.stop === s).length,
  );
  const name = `${label} ${mode}`;
  return {
    rows: [
      row(
        `${name}: requests unanswered over ${settings.stops} stops (of ${load.sent}; max ${Math.max(0, ...perStop)}/stop)`,
        load.lost.length,
        '0',
        load.lost.length === 0,
      ),
      row(
        `${name}: POSTs without an answer (executed anyway: ${executed})`,
        lostPosts.length,
        '0',
        lostPosts.length === 0,
      ),
      zero(`${name}: 5xx answers`, load.serverErrors),
      zero(`${name}: stops not exiting 0`, badExits.length),
    ],
    details: {
      sent: load.sent,
      refusedAndRetried: load.refused,
      lost: load.lost.length,
      lostPerStop: perStop,
      lostCodes: countBy(load.lost.map((l) => `${l.method} ${l.code}${l.reused ? ' (reused)' : ''}`)),
      lostPosts: lostPosts.length,
      lostPostsExecuted: executed,
      serverErrors: load.serverErrors,
      shutdownMs,
      badExits,
    },
  };
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

export async function restart(settings: Settings, cleanup: Cleanup): Promise<ExperimentResult> {
  const rss = new PeakRss();
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  for (const mode of ['busy', 'paced'] as const) {
    const sqlite = await run('SQLite', mode, { ...sqliteEnv(cleanup), DRAIN_SECONDS }, 1, settings, rss);
    rows.push(...sqlite.rows);
    details[`SQLite ${mode}`] = sqlite.details;
    if (!settings.external) continue;
    const env = { ...(await postgresEnv(cleanup, 'restart')), DRAIN_SECONDS };
    const pg = await run('PostgreSQL', mode, env, 2, settings, rss);
    rows.push(...pg.rows);
    details[`PostgreSQL ${mode}`] = pg.details;
  }
  if (!settings.external) rows.push(row('PostgreSQL', 'skipped', 'PostgreSQL unreachable', undefined));
  return { name: 'restart', rows, details, peakRssMb: rss.stop() };
}
