/**
 * Malformed requests: a seeded random run (chaos/malformed-cases.ts) of raw-socket requests, each on a
 * connection of its own. Counted, all with target 0: 5xx answers; connections closed or reset without an
 * answer; a valid request followed by garbage on one connection that does not get both answers; hangs (no
 * answer within 3 s, though every case is complete); error answers (≥ 400) not in the Error shape (JSON
 * {code, message, status} with status equal to the HTTP status); answers without X-Request-Id; and 2xx
 * answers to a pets route reached without a valid key.
 */
import { serve, terminate } from '../support/processes.js';
import {
  createKey,
  isErrorShape,
  PeakRss,
  row,
  sqliteEnv,
  zero,
  type Cleanup,
  type ExperimentResult,
  type Settings,
} from './common.js';
import { malformedCases, type Case } from './malformed-cases.js';
import { exchange, type Exchange } from './raw.js';

const HANG_MS = 3_000;
const CONCURRENCY = 32;
const EXAMPLES = 5;

type Failure =
  | 'serverError'
  | 'noAnswer'
  | 'pipelinedUnanswered'
  | 'hang'
  | 'notErrorShape'
  | 'noRequestId'
  | 'unauthenticated2xx';

const LABELS: Record<Failure, string> = {
  serverError: '5xx answers',
  noAnswer: 'closed or reset without an answer',
  pipelinedUnanswered: 'pipelined requests closed without all their answers',
  hang: `hangs (no answer within ${HANG_MS / 1000} s)`,
  notErrorShape: 'error answers not in the Error shape',
  noRequestId: 'answers without X-Request-Id',
  unauthenticated2xx: '2xx from a pets route without a valid key',
};

function judge(c: Case, result: Exchange): Failure[] {
  const failures: Failure[] = [];
  if (result.responses.length === 0) failures.push(result.timedOut ? 'hang' : 'noAnswer');
  else if (result.responses.length < c.want) failures.push(result.timedOut ? 'hang' : 'pipelinedUnanswered');
  for (const response of result.responses) {
    if (response.status >= 500) failures.push('serverError');
    // A HEAD answer has no body to judge.
    if (
      response.status >= 400 &&
      !c.head &&
      !isErrorShape(response.status, response.headers['content-type'], response.body)
    )
      failures.push('notErrorShape');
    if (!response.headers['x-request-id']) failures.push('noRequestId');
  }
  const first = result.responses[0];
  if (c.protectedWithoutKey && first && first.status >= 200 && first.status < 300)
    failures.push('unauthenticated2xx');
  return [...new Set(failures)];
}

/** The request's first bytes, printable, for the examples in results.json. */
function show(bytes: Buffer): string {
  return JSON.stringify(bytes.subarray(0, 160).toString('latin1')).slice(1, -1);
}

export async function malformed(settings: Settings, cleanup: Cleanup): Promise<ExperimentResult> {
  const rss = new PeakRss();
  // Limits would turn most cases into 429s before they reach the code under test.
  // AUTH_FAILURES_PER_MINUTE: the failed-authentication lockout (docs/api.md; ignored where not built).
  const env = {
    ...sqliteEnv(cleanup),
    UNAUTHENTICATED_PER_MINUTE: '1000000000',
    AUTH_FAILURES_PER_MINUTE: '1000000',
  };
  const key = await createKey(env);
  const server = await serve('malformed', env);
  rss.watch(server.child);
  const port = Number(new URL(server.origin).port);
  const cases = malformedCases(key, settings.seed, settings.malformedRequests);
  const counts = Object.fromEntries(Object.keys(LABELS).map((f) => [f, 0])) as Record<Failure, number>;
  const examples = Object.fromEntries(Object.keys(LABELS).map((f) => [f, [] as string[]])) as Record<
    Failure,
    string[]
  >;
  const byKind: Record<string, { sent: number; statuses: Record<string, number> }> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        const result = await exchange({
          port,
          timeoutMs: HANG_MS,
          want: c.want,
          head: c.head,
          send: (socket) => {
            socket.on('error', () => {}); // EPIPE when the server answers (413, 431) before reading it all.
            socket.write(c.bytes);
          },
        });
        const kind = (byKind[c.kind] ??= { sent: 0, statuses: {} });
        kind.sent++;
        const status = result.responses.map((r) => r.status).join('+') || (result.timedOut ? 'hang' : 'none');
        kind.statuses[status] = (kind.statuses[status] ?? 0) + 1;
        for (const failure of judge(c, result)) {
          counts[failure]++;
          if (examples[failure].length < EXAMPLES) examples[failure].push(`${status} ← ${show(c.bytes)}`);
        }
      }
    }),
  );
  rss.sample();
  const alive = server.child.exitCode === null && server.child.signalCode === null;
  await terminate(server).catch(() => undefined);
  return {
    name: 'malformed requests',
    rows: [
      row('requests sent (seed)', `${cases.length} (seed ${settings.seed})`, '≥ 5000', cases.length >= 5000),
      ...(Object.keys(LABELS) as Failure[]).map((f) => zero(LABELS[f], counts[f])),
      row('server still running afterwards', alive ? 'yes' : 'no', 'yes', alive),
    ],
    details: { seed: settings.seed, counts, examples, byKind },
    peakRssMb: rss.stop(),
  };
}
