/**
 * No connection is stranded: every connection the kernel accepts on the API port gets an answer or a close,
 * from the first instant the port listens (start-up) to the last (a restart under load), on real sockets.
 * From the moment the process is spawned a client opens a new connection every few milliseconds and sends
 * one request on each; a connection that was accepted (its handshake completed) and then got neither an
 * answer nor a close fails the test, and so does a `408`: the request was sent whole, so a timeout means the
 * service never read it. Refused connections (nothing listening yet, or between two instances) are fine.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { backends } from './helpers.js';
import {
  cli,
  CLI,
  environmentFor,
  killAll,
  serve,
  terminate,
  waitForExit,
  type Environment,
  type Server,
} from '../support/processes.js';

/** How often a new connection is opened. */
const OPEN_EVERY_MS = 5;
/**
 * A bound only, so that a stranded connection fails the test instead of holding it: the service answers these
 * requests in milliseconds. Above the headers timeout (10 s), so that a request the service never read shows
 * as its 408 rather than as silence.
 */
const STRANDED_AFTER_MS = 15_000;
/** A bound only: how long the service may take to answer the connections a step waits for. */
const STEP_TIMEOUT_MS = 60_000;
/** Answers to see after each instance has announced itself, so the probing goes on well past start-up. */
const ANSWERS_AFTER_START = 300;
const PETS = 150;

interface Outcome {
  /** Milliseconds since the probing started. */
  openedAt: number;
  connected: boolean;
  /** The status line's code, once one arrived. */
  status?: number;
  /** How it ended: an answer, a close (or reset) without one, refused before connecting, or nothing. */
  end: 'answered' | 'closed' | 'refused' | 'stranded';
  detail?: string;
}

/** A port nothing listens on now, for a service that must be probed before it announces itself. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Opens a new connection every OPEN_EVERY_MS, one request on each, and records how each ended. */
class Prober {
  readonly outcomes: Outcome[] = [];
  private readonly open = new Set<Promise<void>>();
  private readonly waiters: { count: number; resolve: () => void }[] = [];
  private answered = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly started = Date.now();

  constructor(
    private readonly port: number,
    private readonly request: string,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.probe(), OPEN_EVERY_MS);
  }

  /** Stops opening connections; resolves once every one opened has ended (or been found stranded). */
  async stop(): Promise<Outcome[]> {
    clearInterval(this.timer);
    while (this.open.size > 0) await Promise.all(this.open);
    return this.outcomes;
  }

  /** Resolves once `more` further connections have been answered 200. */
  answeredMore(more: number, what: string): Promise<void> {
    const count = this.answered + more;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${what}: ${this.answered} answered of ${count} awaited`)),
        STEP_TIMEOUT_MS,
      );
      this.waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  private probe(): void {
    const outcome: Outcome = { openedAt: Date.now() - this.started, connected: false, end: 'stranded' };
    const socket = connect({ port: this.port, host: '127.0.0.1' });
    let received = '';
    const ended = new Promise<void>((resolve) => {
      let stranded: NodeJS.Timeout | undefined;
      let done = false;
      const finish = (end: Outcome['end'], detail?: string): void => {
        if (done) return;
        done = true;
        clearTimeout(stranded);
        outcome.end = end;
        outcome.detail = detail;
        this.outcomes.push(outcome);
        socket.destroy();
        resolve();
      };
      socket.once('connect', () => {
        outcome.connected = true;
        stranded = setTimeout(
          () =>
            finish(
              'stranded',
              `nothing within ${STRANDED_AFTER_MS} ms; received ${JSON.stringify(received)}`,
            ),
          STRANDED_AFTER_MS,
        );
        socket.write(this.request);
      });
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        if (done) return;
        received += chunk;
        const line = /^HTTP\/1\.1 (\d{3})/.exec(received);
        if (!line) return;
        outcome.status = Number(line[1]);
        if (outcome.status === 200) this.answered++;
        for (const waiter of this.waiters.filter((w) => this.answered >= w.count)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
        finish('answered');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => {
        if (!outcome.connected) finish('refused', error.code);
        else finish('closed', error.code);
      });
      socket.on('close', () => {
        if (outcome.connected) finish('closed', 'closed by the service');
        else finish('refused', 'closed before connecting');
      });
    });
    this.open.add(ended);
    void ended.then(() => this.open.delete(ended));
  }
}

/** Every accepted connection was answered (not with a timeout) or closed. */
function assertNoneStranded(outcomes: Outcome[], label: string): void {
  const accepted = outcomes.filter((o) => o.connected);
  const bad = accepted.filter((o) => o.end === 'stranded' || o.status === 408);
  const answered = accepted.filter((o) => o.status === 200).length;
  assert.ok(answered > 0, `${label}: no connection was answered`);
  assert.deepEqual(
    bad,
    [],
    `${label}: ${bad.length} of ${accepted.length} accepted connections were stranded (${answered} answered 200)`,
  );
}

function httpRequest(path: string, key?: string): string {
  const auth = key === undefined ? '' : `Authorization: Bearer ${key}\r\n`;
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Connection: close\r\n\r\n`;
}

for (const backend of await backends()) {
  describe(`no connection is stranded [${backend.name}]`, () => {
    let environment: Environment;
    let env: Record<string, string>;
    let key: string;

    before(async () => {
      assert.ok(existsSync(CLI), `${CLI} is missing: run \`npm run build\` (npm test does)`);
      environment = await environmentFor(backend);
      env = environment.env;
      // keys create and seed work on an existing database only; migrate creates it.
      const migrated = await cli(['migrate'], env);
      assert.equal(migrated.code, 0, migrated.stderr);
      const created = await cli(
        [
          ...['keys', 'create', '--account', 'stranded', '--plan', 'enterprise'],
          ...['--per-minute', '1000000000', '--per-day', '1000000000'],
        ],
        env,
      );
      assert.equal(created.code, 0, created.stderr);
      key = created.stdout.trim().split('\n').at(-1)!;
      const seeded = await cli(['seed', '--pets', String(PETS)], env, 120_000);
      assert.equal(seeded.code, 0, seeded.stderr);
    });

    after(async () => {
      await killAll();
      await environment?.cleanup();
    });

    test('from the moment the service is spawned, every connection accepted is answered or closed', async () => {
      const port = await freePort();
      const prober = new Prober(port, httpRequest('/healthz'));
      const starting = serve('startup', { ...env, PORT: String(port) });
      prober.start();
      const running: { server?: Server } = {};
      const failed = await (async () => {
        running.server = await starting;
        await prober.answeredMore(ANSWERS_AFTER_START, 'after the announcement');
      })().catch((error: unknown) => error);
      const outcomes = await prober.stop();
      if (running.server) await terminate(running.server);
      // A stranded connection is the likelier cause of a step that never completed: say so first.
      assertNoneStranded(outcomes, 'start-up');
      if (failed) throw failed;
    });

    test('across restarts under load (SIGTERM, then kill -9), every connection accepted is answered or closed', async () => {
      const port = await freePort();
      const prober = new Prober(port, httpRequest(`/v1/pets?limit=100`, key));
      const start = (name: string): Promise<Server> => serve(name, { ...env, PORT: String(port) });
      const running: { server?: Server } = {};
      const failed = await (async () => {
        let server = (running.server = await start('before restarts'));
        prober.start();
        await prober.answeredMore(ANSWERS_AFTER_START, 'before the SIGTERM');
        await terminate(server);
        server = running.server = await start('after SIGTERM');
        await prober.answeredMore(ANSWERS_AFTER_START, 'after the SIGTERM');
        server.child.kill('SIGKILL');
        await waitForExit(server.child);
        running.server = await start('after kill -9');
        await prober.answeredMore(ANSWERS_AFTER_START, 'after the kill -9');
      })().catch((error: unknown) => error);
      const outcomes = await prober.stop();
      if (running.server) await terminate(running.server);
      assertNoneStranded(outcomes, 'restarts');
      if (failed) throw failed;
    });
  });
}
