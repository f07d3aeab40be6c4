/** The overload scenarios' row and judged figures, from the service's sweep and bare node:http's. */
import type { Outcome, Target } from '../lib/scenario.js';
import { describeAfterRamp, describePolite, type FloodFigures, type SweepFigures } from './sweep.js';

export const OVERLOAD_TARGET: Target = {
  bounds: [
    { metric: 'shareVsBare', atLeast: 0.9 },
    { metric: 'p99At2000', atMost: 500 },
    { metric: 'p99At5000', atMost: 750 },
    { metric: 'unanswered', atMost: 0 },
    { metric: 'probesFailed', atMost: 0 },
    { metric: 'politeRefusalP50', atMost: 100 },
    { metric: 'rssAt5000Mb', atMost: 400 },
    { metric: 'recovered', atLeast: 0.9 },
    { metric: 'lostAcknowledged', atMost: 0 },
  ],
};

export interface Durability {
  acknowledged: number;
  /** Acknowledged with 201 and not listed afterwards. */
  missing: number;
}

const at = (sweep: SweepFigures, connections: number): FloodFigures =>
  sweep.floods.find((f) => f.connections === connections)!;

/**
 * The mean latency a closed loop of this many connections must have at the rate answers (2xx and 503) came:
 * connections ÷ answers a second (Little's law). No admission rule brings a p99 below it, so the note states
 * it beside the p99: a p99 target under the floor was out of reach on that machine that day.
 */
const floorMs = (w: { connections: number; requests: number; durationS: number }): number =>
  w.requests === 0 ? Infinity : (w.connections * 1000 * w.durationS) / w.requests;

function describe(f: FloodFigures): string {
  const w = f.flood;
  return (
    `${f.connections} conn: share ${f.share.toFixed(2)} (${w.rps2xx.toFixed(0)} 2xx/s, ${w.refused} of ${w.requests} refused), ` +
    `p50/p99/max ${w.p50.toFixed(0)}/${w.p99.toFixed(0)}/${w.max.toFixed(0)} ms (closed-loop floor ${floorMs(w).toFixed(0)} ms), ` +
    `${describeAfterRamp(f.afterRamp)}${w.timeout} timeouts, ` +
    `socket errors c/r/w ${w.connect}/${w.read}/${w.write}, ${w.cpuUs?.toFixed(0) ?? '—'} µs/answer, ` +
    `probes ${f.probes.failed}/${f.probes.count} failed (p50 ${f.probes.p50.toFixed(0)}, max ${f.probes.max.toFixed(0)} ms), ` +
    describePolite(f.polite) +
    `RSS ${f.rssPeakMb.toFixed(0)} MB, recovered ${f.recovered.toFixed(2)}`
  );
}

export function overloadOutcome(service: SweepFigures, bare: SweepFigures, durability: Durability): Outcome {
  const shares = service.floods.map((f) => f.share / at(bare, f.connections).share);
  const s2k = at(service, 2000);
  const s5k = at(service, 5000);
  const unanswered = service.floods.reduce((n, f) => n + f.flood.timeout + f.flood.read + f.flood.write, 0);
  const metrics: Record<string, number> = {
    shareVsBare: Math.min(...shares),
    p99At2000: s2k.flood.p99,
    p99At5000: s5k.flood.p99,
    unanswered,
    probesFailed: service.floods.reduce((n, f) => n + f.probes.failed, 0),
    // The slower flood's median time to a polite client's 503; a flood that refused it nothing adds nothing.
    politeRefusalP50: Math.max(
      0,
      ...service.floods.map((f) => f.polite?.refusedP50 ?? NaN).filter((ms) => Number.isFinite(ms)),
    ),
    rssAt5000Mb: s5k.rssPeakMb,
    recovered: Math.min(...service.floods.map((f) => f.recovered)),
    lostAcknowledged: durability.missing,
    bareShare2000: at(bare, 2000).share,
    bareShare5000: at(bare, 5000).share,
    floorAt2000: floorMs(s2k.flood),
    floorAt5000: floorMs(s5k.flood),
    // Reported, not judged: the p99 without the flood's first seconds (see answer-gaps.ts).
    p99AfterRampAt5000: s5k.afterRamp?.p99 ?? NaN,
  };
  const note =
    `16 conn ${service.base.rps2xx.toFixed(0)} 2xx/s (${service.base.cpuUs?.toFixed(0) ?? '—'} µs/req); ` +
    `${describe(s2k)}; ${describe(s5k)}; share ÷ bare's: ${shares.map((s) => s.toFixed(2)).join(', ')}; ` +
    `${durability.acknowledged} pets acknowledged with 201, ${durability.missing} missing. ` +
    `Bare node:http: 16 conn ${bare.base.rps2xx.toFixed(0)}/s; ${bare.floods.map(describe).join('; ')}`;
  return {
    row: {
      value: `share ÷ bare ${shares.map((s) => s.toFixed(2)).join(' / ')}`,
      rps: s5k.flood.rps2xx,
      p50: s5k.flood.p50,
      p99: s5k.flood.p99,
      cpuUs: s5k.flood.cpuUs,
      note,
    },
    metrics,
    // Refusals (503 overloaded) are the protection working, not failures; unanswered requests are judged above.
    failures: service.floods.reduce((n, f) => n + f.flood.other, 0),
    settings: { overload: { service, bare, durability } },
  };
}
