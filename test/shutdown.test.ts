/**
 * Shutdown drains (DESIGN 4.6), end to end: the built server as a child process, SIGTERM under keep-alive
 * load from several clients (busy ones sending back to back, paced ones with pauses in between), repeated.
 * Every request sent on a connection the service accepted gets an answer (the next answer on a kept-alive
 * connection says `Connection: close`; an idle one is not cut while a request may be on its way), and
 * every acknowledged POST is found after a restart on the same database. With DRAIN_SECONDS, /readyz
 * answers 503 first while everything else is still served.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as pause } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { Pet } from '../src/modules/pets/schemas.js';
import { backends } from './helpers.js';
import {
  cli,
  CLI,
  environmentFor,
  killAll,
  serve,
  terminate,
  type Environment,
  type Server,
} from '../support/processes.js';

const STOPS = Number(process.env.SHUTDOWN_STOPS ?? 10);
const BUSY_CLIENTS = 8;
const PACED_CLIENTS = 8;
/** Answers to see before each SIGTERM, so that the stop lands under load. */
const ANSWERS_BEFORE_STOP = 60;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function send(agent: http.Agent, origin: string, method: string, path: string, key: string, body?: unknown) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const url = new URL(path, origin);
  return new Promise<Answer & { reused: boolean }>((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
        // A guard only: an unanswered request fails the test instead of stalling it.
        timeout: 20_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, reused: req.reusedSocket }),
        );
        res.on('error', (error) => reject(Object.assign(error, { reused: req.reusedSocket })));
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('no answer'), { code: 'TIMEOUT' })));
    req.on('error', (error) => reject(Object.assign(error, { reused: req.reusedSocket })));
    req.end(payload);
  });
}

/** Keep-alive clients against one server, each until the server refuses connections (it has gone). */
class KeepAliveLoad {
  readonly acked: Pet[] = [];
  /** Failures on a connection the service had accepted (a reused one): requests lost. */
  readonly lost: string[] = [];
  /** Failures while connecting afresh (the listener closing under a connect): the POST names, to check. */
  readonly notConnected: { error: string; postedName: string | undefined }[] = [];
  readonly wrong: string[] = [];
  closeAnswers = 0;
  answers = 0;
  private readonly waiters: { count: number; resolve: () => void }[] = [];
  private readonly run: Promise<void>;

  constructor(
    private readonly origin: string,
    private readonly key: string,
    private readonly round: number,
  ) {
    const workers = [
      ...Array.from({ length: BUSY_CLIENTS }, (_, i) => this.worker(`busy${i}`, false)),
      ...Array.from({ length: PACED_CLIENTS }, (_, i) => this.worker(`paced${i}`, true)),
    ];
    this.run = Promise.all(workers).then(() => undefined);
  }

  /** Resolves once `count` answers have arrived in all. */
  answered(count: number): Promise<void> {
    if (this.answers >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  finished(): Promise<void> {
    return this.run;
  }

  private async worker(name: string, paced: boolean): Promise<void> {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; ; i++) {
        const post = i % 2 === 0;
        const petName = `r${this.round} ${name} ${i}`;
        try {
          const answer = post
            ? await send(agent, this.origin, 'POST', '/v1/pets', this.key, { name: petName, categoryId: 1 })
            : await send(agent, this.origin, 'GET', '/v1/pets?limit=3', this.key);
          this.answers++;
          for (const w of this.waiters.filter((x) => this.answers >= x.count)) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve();
          }
          if (answer.headers.connection === 'close') this.closeAnswers++;
          if (answer.status !== (post ? 201 : 200)) this.wrong.push(`${answer.status} ${answer.text}`);
          else if (post) this.acked.push(JSON.parse(answer.text) as Pet);
        } catch (error) {
          const { code, reused } = error as NodeJS.ErrnoException & { reused: boolean };
          // Refused: the listener is closed and the server gone or going; nothing reached it.
          if (code === 'ECONNREFUSED') return;
          const text = `${name} #${i} ${post ? 'POST' : 'GET'} ${code ?? ''} ${(error as Error).message}`;
          if (reused || code === 'TIMEOUT') this.lost.push(text);
          else this.notConnected.push({ error: text, postedName: post ? petName : undefined });
        }
        // The pace of a client with pauses between requests (not a wait for anything).
        if (paced) await pause(5 + ((i * 37) % 60));
      }
    } finally {
      agent.destroy();
    }
  }
}

async function createKey(env: Record<string, string>): Promise<string> {
  // keys create works on an existing database only; migrate creates it.
  const migrated = await cli(['migrate'], env);
  assert.equal(migrated.code, 0, migrated.stderr);
  const result = await cli(
    ['keys', 'create', '--account', 'drain', '--plan', 'enterprise', '--per-minute', '100000000'],
    env,
  );
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trim().split('\n').at(-1)!;
}

async function allPets(server: Server, key: string): Promise<Pet[]> {
  const agent = new http.Agent({ keepAlive: true });
  const pets: Pet[] = [];
  try {
    let path: string | undefined = '/v1/pets?limit=100';
    while (path) {
      const res = await send(agent, server.origin, 'GET', path, key);
      assert.equal(res.status, 200, res.text);
      pets.push(...(JSON.parse(res.text) as Pet[]));
      path = /<([^>]+)>;\s*rel="next"/.exec(String(res.headers.link ?? ''))?.[1];
    }
  } finally {
    agent.destroy();
  }
  return pets;
}

for (const backend of await backends()) {
  describe(`SIGTERM under keep-alive load [${backend.name}]`, () => {
    let environment: Environment;
    let env: Record<string, string>;
    let key: string;

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      env = environment.env;
      key = await createKey(env);
    });

    after(async () => {
      await killAll();
      await environment?.cleanup();
    });

    test(`${STOPS} stops: every request on an accepted connection is answered, every acknowledged POST kept`, async () => {
      const acked: Pet[] = [];
      const notConnected: KeepAliveLoad['notConnected'] = [];
      const report: string[] = [];
      for (let round = 0; round < STOPS; round++) {
        const server = await serve(`drain-${round}`, env);
        const load = new KeepAliveLoad(server.origin, key, round);
        await load.answered(ANSWERS_BEFORE_STOP);
        const exit = await terminate(server);
        await load.finished();
        const line =
          `stop ${round}: exit ${exit.code} after ${exit.ms} ms, ${load.answers} answers ` +
          `(${load.closeAnswers} with Connection: close), ${load.lost.length} lost, ` +
          `${load.notConnected.length} failed while connecting`;
        report.push(line);
        assert.equal(exit.code, 0, `${line}\n${server.output()}`);
        assert.deepEqual(load.lost, [], line);
        assert.deepEqual(load.wrong, [], line);
        // Each client's connection ended by being told so on an answer, none by being cut while idle.
        assert.equal(load.closeAnswers, BUSY_CLIENTS + PACED_CLIENTS, `Connection: close answers: ${line}`);
        acked.push(...load.acked);
        notConnected.push(...load.notConnected);
      }
      console.log(report.join('\n'));

      const server = await serve('after', env);
      const stored = new Map((await allPets(server, key)).map((p) => [p.id, p]));
      const missing = acked.filter((p) => JSON.stringify(stored.get(p.id)) !== JSON.stringify(p));
      assert.deepEqual(missing, [], 'every acknowledged POST is there after the restarts');
      assert.ok(acked.length >= STOPS * 10, `enough writes to mean something: ${acked.length}`);
      const storedNames = new Set([...stored.values()].map((p) => p.name));
      for (const failed of notConnected) {
        // A connect the listener never accepted carried no request: nothing may have been executed.
        assert.ok(!failed.postedName || !storedNames.has(failed.postedName), failed.error);
      }
      assert.equal((await terminate(server)).code, 0);
    });

    test('DRAIN_SECONDS: /readyz answers 503 while every other request is still served', async () => {
      const server = await serve('drain-period', { ...env, DRAIN_SECONDS: '2' });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const ready = await send(agent, server.origin, 'GET', '/readyz', key);
        assert.equal(ready.status, 200, ready.text);
        const exited = terminate(server);
        // Each answer is the event: ask until the SIGTERM shows.
        let readyz: Answer;
        do readyz = await send(agent, server.origin, 'GET', '/readyz', key);
        while (readyz.status === 200);
        assert.equal(readyz.status, 503, readyz.text);
        assert.equal((JSON.parse(readyz.text) as { status: string }).status, 'draining');
        const listed = await send(agent, server.origin, 'GET', '/v1/pets?limit=1', key);
        assert.equal(listed.status, 200, 'still serving while draining');
        assert.notEqual(listed.headers.connection, 'close', 'kept alive while draining');
        // New connections are still accepted during the drain period.
        const fresh = new http.Agent({ keepAlive: false });
        const created = await send(fresh, server.origin, 'POST', '/v1/pets', key, {
          name: 'Drain',
          categoryId: 2,
        });
        fresh.destroy();
        assert.equal(created.status, 201, created.text);
        const exit = await exited;
        assert.equal(exit.code, 0, server.output());
        assert.ok(exit.ms >= 2_000, `the drain period was kept: ${exit.ms} ms`);
      } finally {
        agent.destroy();
      }
    });
  });
}
