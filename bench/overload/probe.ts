/**
 * The liveness probe of the overload scenario, in a process of its own so that the load generator's work
 * does not delay it: every INTERVAL ms it opens a new connection and sends `GET /healthz`, as an
 * orchestrator does, and gives up after TIMEOUT ms. On SIGTERM it waits for the probes still out (at most
 * TIMEOUT ms), prints one JSON line `{"probes":[{"at":…,"ms":…,"status":…}]}` (`at`:
 * sent, ms after the first; status 0: no answer in time, -1: connection error) and exits.
 *
 * Given a path and an Authorization header it is a polite API client instead: the same new connection every
 * INTERVAL ms, but after a 503 it sends nothing until its Retry-After has passed, as a client that honours it
 * does. Under a flood such a client should get its answer, or its refusal, soon.
 *
 *   node --import tsx bench/overload/probe.ts <origin> [intervalMs=250] [timeoutMs=1000] [path=/healthz] [authorization]
 */
import { get } from 'node:http';
import { PROBE_USER_AGENT } from './answer-gaps.js';

const [origin, intervalArg, timeoutArg, pathArg, authorization] = process.argv.slice(2);
if (!origin) {
  process.stderr.write('usage: probe.ts <origin> [intervalMs] [timeoutMs]\n');
  process.exit(2);
}
const intervalMs = Number(intervalArg ?? 250);
const timeoutMs = Number(timeoutArg ?? 1000);
const path = pathArg ?? '/healthz';
// Named, so that the answer gaps (answer-gaps.ts) leave its connections out: the kernel may give a later
// probe the port of an earlier one, which would read as one connection with a long gap.
const headers = { 'user-agent': PROBE_USER_AGENT, ...(authorization ? { authorization } : {}) };
/** performance.now() before which a polite client sends nothing (a 503's Retry-After). */
let quietUntil = 0;

interface Probe {
  /** When it was sent, ms after the first probe. */
  at: number;
  ms: number;
  status: number;
}
const origin0 = performance.now();
const probes: Probe[] = [];
const pending = new Set<Promise<void>>();

function probe(): void {
  const started = performance.now();
  const done = new Promise<void>((resolve) => {
    let settled = false;
    const finish = (status: number): void => {
      if (settled) return;
      settled = true;
      probes.push({ at: Math.round(started - origin0), ms: performance.now() - started, status });
      resolve();
    };
    // agent: false: a new connection every time, as a kubelet's HTTP probe opens.
    const req = get(`${origin}${path}`, { agent: false, timeout: timeoutMs, headers }, (res) => {
      res.resume();
      if (res.statusCode === 503) {
        quietUntil = performance.now() + 1000 * Number(res.headers['retry-after'] ?? 1);
      }
      res.on('end', () => finish(res.statusCode ?? -1));
    });
    const timer = setTimeout(() => {
      finish(0);
      req.destroy();
    }, timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', () => finish(-1));
  });
  pending.add(done);
  void done.then(() => pending.delete(done));
}

const timer = setInterval(() => performance.now() >= quietUntil && probe(), intervalMs);
probe();
process.on('SIGTERM', () => {
  clearInterval(timer);
  void Promise.all(pending).then(() => {
    process.stdout.write(`${JSON.stringify({ probes })}\n`);
    process.exit(0);
  });
});
process.stderr.write('probe running\n');
