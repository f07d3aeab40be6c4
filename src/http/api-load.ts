/**
 * Whether API requests are keeping the event loop busy, sampled every interval: the loop's utilisation at
 * least BUSY_UTILISATION while requests arrive at least BUSY_REQUESTS_PER_S. Background work (webhook
 * deliveries) yields while it holds, so a saturated instance spends its loop on answers; the work waits in
 * the database and catches up once the load eases.
 *
 * Both conditions, because either alone misleads: the utilisation counts the background work itself (a
 * dispatcher draining a backlog with no API traffic would throttle itself), and a request rate says nothing
 * of how much room is left. The count of requests in flight was tried first: with writes answered together
 * after each turn's commit, it reads near zero at the moment the dispatcher looks, however busy the loop.
 */
import { performance } from 'node:perf_hooks';

export const BUSY_UTILISATION = 0.9;
export const BUSY_REQUESTS_PER_S = 1_000;

export interface ApiLoad {
  busy(): boolean;
  stop(): void;
}

export interface ApiLoadOptions {
  intervalMs?: number;
  /** Called with each sample's verdict (tests wait on it). */
  onSample?: (busy: boolean) => void;
}

export function watchApiLoad(admitted: () => number, options: ApiLoadOptions = {}): ApiLoad {
  const { intervalMs = 100, onSample } = options;
  let busy = false;
  let lastUtilisation = performance.eventLoopUtilization();
  let lastAdmitted = admitted();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilisation = performance.eventLoopUtilization(now, lastUtilisation).utilization;
    lastUtilisation = now;
    const count = admitted();
    const perS = ((count - lastAdmitted) * 1000) / intervalMs;
    lastAdmitted = count;
    busy = utilisation >= BUSY_UTILISATION && perS >= BUSY_REQUESTS_PER_S;
    onSample?.(busy);
  }, intervalMs);
  timer.unref();
  return { busy: () => busy, stop: () => clearInterval(timer) };
}
