/**
 * The liveness probe of the overload scenario, in a process of its own so that the load generator's work
 * does not delay it: every INTERVAL ms it opens a new connection and sends `GET /healthz`, as an
 * orchestrator does, and gives up after TIMEOUT ms. On SIGTERM it waits for the probes still out (at most
 * TIMEOUT ms), prints one JSON line `{"probes":[{"at":…,"ms":…,"status":…}]}` (`at`:
 * sent, ms after the first; status 0: no answer in time, -1: connection error) and exits.
 *
 *   node --import tsx bench/overload/probe.ts <origin> [intervalMs=250] [timeoutMs=1000]
 */
import { get } from 'node:http';

const [origin, intervalArg, timeoutArg] = process.argv.slice(2);
if (!origin) {
  process.stderr.write('usage: probe.ts <origin> [intervalMs] [timeoutMs]\n');
  process.exit(2);
}
const intervalMs = Number(intervalArg ?? 250);
const timeoutMs = Number(timeoutArg ?? 1000);

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
    const req = get(`${origin}/healthz`, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
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

const timer = setInterval(probe, intervalMs);
probe();
process.on('SIGTERM', () => {
  clearInterval(timer);
  void Promise.all(pending).then(() => {
    process.stdout.write(`${JSON.stringify({ probes })}\n`);
    process.exit(0);
  });
});
process.stderr.write('probe running\n');
