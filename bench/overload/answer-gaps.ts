/**
 * The flood's latency after its ramp, from the service's own request log. wrk reports one p99 over the whole
 * flood. At 5,000 connections the flood's first second alone can set it: thousands of new connections are
 * accepted, read and answered at once (bench/JOURNAL.md, 2026-11-28, night). This figure leaves that second
 * out, so the two side by side say whether the ramp or the rest set the p99. A wrk connection
 * sends its next request as soon as it has read an answer, so the time between two answers on one connection
 * (the log line's `req.remotePort` and `time`) is the latter request's latency plus wrk's own delay in sending
 * it: an upper bound on what wrk measured for that request. The first answer on each connection has no gap and
 * is left out, and so are the probes' (a new connection each, whose port a later one may get).
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { percentile } from '../lib/stats.js';

/** The User-Agent of probe.ts, the liveness probe and the polite client (wrk sends none). */
export const PROBE_USER_AGENT = 'pet-adoption-bench-probe';

export interface AnswerGaps {
  /** Answers after the ramp that had an earlier answer on their connection. */
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Where the log ends now: read from here once the flood is over. */
export function logOffset(file: string): number {
  return statSync(file, { throwIfNoEntry: false })?.size ?? 0;
}

interface CompletedLine {
  time?: number;
  userAgent?: string;
  req?: { remotePort?: number };
}

/**
 * The gaps between answers on one connection, over the answers logged from `fromMs + rampMs` to `toMs`
 * (epoch ms), reading the log from `offset` on. NaN figures when none qualified.
 */
export async function answerGaps(
  file: string,
  offset: number,
  window: { fromMs: number; toMs: number; rampMs: number },
): Promise<AnswerGaps> {
  const lastAnswer = new Map<number, number>();
  const gaps: number[] = [];
  const lines = createInterface({ input: createReadStream(file, { start: offset }), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.includes('"request completed"')) continue;
    let parsed: CompletedLine;
    try {
      parsed = JSON.parse(line) as CompletedLine;
    } catch {
      continue; // a line cut by the offset
    }
    const { time } = parsed;
    const port = parsed.req?.remotePort;
    if (time === undefined || port === undefined || time < window.fromMs || time > window.toMs) continue;
    if (parsed.userAgent === PROBE_USER_AGENT) continue;
    const previous = lastAnswer.get(port);
    lastAnswer.set(port, time);
    if (previous !== undefined && time >= window.fromMs + window.rampMs) gaps.push(time - previous);
  }
  gaps.sort((a, b) => a - b);
  return {
    count: gaps.length,
    p50: percentile(gaps, 50),
    p99: percentile(gaps, 99),
    max: percentile(gaps, 100),
  };
}
