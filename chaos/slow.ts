/**
 * Slow clients: request headers trickled one byte a second, and a POST whose body is trickled one byte a
 * second after complete headers. Measured: how long until the server answers or closes, and whether the
 * answer is a 408 in the Error shape with an X-Request-Id. Target: within the server's header and request
 * timeouts plus a second, Error-shaped. The harness gives up after the target plus 5 s (a "hang").
 */
import type net from 'node:net';
import { serve, terminate } from '../support/processes.js';
import {
  createKey,
  isErrorShape,
  ms,
  PeakRss,
  row,
  sqliteEnv,
  type Cleanup,
  type ExperimentResult,
  type Row,
  type Settings,
} from './common.js';
import { exchange, type Exchange } from './raw.js';

/**
 * The bounds the fixed server is meant to keep (docs/operations.md, "Slow and malformed clients": slow senders cannot hold connections open).
 * Align these with the server's header and body timeouts if those change.
 */
const HEADERS_BOUND_MS = 10_000;
const BODY_BOUND_MS = 30_000;
const MARGIN_MS = 1_000;

/** Writes `text` one byte a second, then keeps sending filler bytes of `filler` until stopped. */
function trickle(prefix: string, text: string, filler: string): (socket: net.Socket) => () => void {
  return (socket) => {
    socket.write(prefix);
    let i = 0;
    const timer = setInterval(() => {
      const byte = i < text.length ? text[i] : filler;
      i++;
      if (!socket.destroyed) socket.write(byte!);
    }, 1000);
    return () => clearInterval(timer);
  };
}

function describe(result: Exchange): { figure: string; shaped: boolean; status: number | undefined } {
  const first = result.responses[0];
  const when = ms(result.firstByteMs ?? result.endMs);
  if (first) {
    const shaped =
      isErrorShape(first.status, first.headers['content-type'], first.body) &&
      !!first.headers['x-request-id'];
    return { figure: `${first.status} after ${when}`, shaped, status: first.status };
  }
  if (result.timedOut)
    return {
      figure: `no answer after ${ms(result.endMs)} (harness gave up)`,
      shaped: false,
      status: undefined,
    };
  return {
    figure: `closed without an answer after ${ms(result.endMs)}${result.reset ? ` (${result.reset})` : ''}`,
    shaped: false,
    status: undefined,
  };
}

export async function slow(_settings: Settings, cleanup: Cleanup): Promise<ExperimentResult> {
  const rss = new PeakRss();
  const env = sqliteEnv(cleanup);
  const key = await createKey(env);
  const server = await serve('slow', env);
  rss.watch(server.child);
  const port = Number(new URL(server.origin).port);
  const body = JSON.stringify({ name: 'slow body', categoryId: 1 }).padEnd(1000, ' ');
  const [headers, bodies] = await Promise.all([
    exchange({
      port,
      timeoutMs: HEADERS_BOUND_MS + MARGIN_MS + 5_000,
      // The first byte goes at once: the header bound runs from a request's first byte (a connection that
      // sends nothing is closed after the same bound), and the figure is measured from the connect.
      send: trickle(
        'G',
        `ET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nX-Slow: `,
        'a',
      ),
    }),
    exchange({
      port,
      timeoutMs: BODY_BOUND_MS + MARGIN_MS + 5_000,
      send: trickle(
        `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        body,
        ' ',
      ),
    }),
  ]);
  rss.sample();
  await terminate(server);
  const rows: Row[] = [];
  for (const [what, result, bound] of [
    ['headers trickled 1 byte/s', headers, HEADERS_BOUND_MS],
    ['body trickled 1 byte/s', bodies, BODY_BOUND_MS],
  ] as const) {
    const d = describe(result);
    const answeredAt = result.firstByteMs ?? result.endMs;
    rows.push(
      row(
        `${what}: answer`,
        d.figure,
        `408 ≤ ${ms(bound + MARGIN_MS)}`,
        d.status === 408 && answeredAt <= bound + MARGIN_MS,
      ),
      row(`${what}: answer in the Error shape with X-Request-Id`, d.shaped ? 'yes' : 'no', 'yes', d.shaped),
    );
  }
  return {
    name: 'slow clients',
    rows,
    details: {
      boundsMs: { headers: HEADERS_BOUND_MS, body: BODY_BOUND_MS, margin: MARGIN_MS },
      headers,
      body: bodies,
    },
    peakRssMb: rss.stop(),
  };
}
