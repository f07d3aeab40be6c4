/**
 * Raw-socket exchanges: bytes no HTTP client library would send, and a small parser for whatever comes back,
 * so an answer, a close without one, a reset and silence are told apart.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

export interface Exchange {
  responses: RawResponse[];
  /** The server closed (or reset) the connection. */
  closed: boolean;
  /** Error code when it was reset (ECONNRESET, EPIPE) rather than closed. */
  reset: string | undefined;
  /** Nothing (more) came before the timeout. */
  timedOut: boolean;
  /** Bytes that did not make a complete response. */
  leftover: number;
  firstByteMs: number | undefined;
  /** When the exchange ended: the wanted answers arrived, the server closed, or the timeout. */
  endMs: number;
}

export interface ExchangeOptions {
  port: number;
  /** Sends the request; may keep writing (a slow client) until `stop` is called. */
  send: (socket: net.Socket) => (() => void) | void;
  timeoutMs: number;
  /** Stop once this many responses arrived (default 1). */
  want?: number;
  /** HEAD: responses carry no body whatever Content-Length says. */
  head?: boolean;
}

/** Parses complete responses off the front of `buffer`; returns them and the bytes left over. */
function parse(buffer: Buffer, head: boolean, ended: boolean): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let rest = buffer.subarray(end + 4);
    let body: Buffer;
    if (head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const chunks: Buffer[] = [];
      let at = 0;
      let done = false;
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', at);
        if (lineEnd < 0) break;
        const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) break;
        if (size === 0) {
          const trailerEnd = rest.indexOf('\r\n', lineEnd + 2);
          if (trailerEnd < 0) break;
          at = trailerEnd + 2;
          done = true;
          break;
        }
        if (rest.length < lineEnd + 2 + size + 2) break;
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      if (!done) break;
      body = Buffer.concat(chunks);
      rest = rest.subarray(at);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (rest.length < length) break;
      body = rest.subarray(0, length);
      rest = rest.subarray(length);
    } else {
      // Delimited by the close.
      if (!ended) break;
      body = rest;
      rest = Buffer.alloc(0);
    }
    responses.push({ status, headers, body: body.toString('utf8') });
    buffer = rest;
  }
  return { responses, rest: buffer };
}

export function exchange(options: ExchangeOptions): Promise<Exchange> {
  const want = options.want ?? 1;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(options.port, '127.0.0.1');
    socket.setNoDelay(true);
    let buffer: Buffer = Buffer.alloc(0);
    const result: Exchange = {
      responses: [],
      closed: false,
      reset: undefined,
      timedOut: false,
      leftover: 0,
      firstByteMs: undefined,
      endMs: 0,
    };
    let stopSending: (() => void) | void;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      stopSending?.();
      result.endMs = performance.now() - started;
      result.leftover = buffer.length;
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      result.timedOut = true;
      finish();
    }, options.timeoutMs);
    const take = (ended: boolean): void => {
      const parsed = parse(buffer, options.head ?? false, ended);
      result.responses.push(...parsed.responses);
      buffer = parsed.rest;
    };
    socket.on('connect', () => {
      stopSending = options.send(socket);
    });
    socket.on('data', (chunk: Buffer) => {
      result.firstByteMs ??= performance.now() - started;
      buffer = Buffer.concat([buffer, chunk]);
      take(false);
      if (result.responses.length >= want) finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (!finished) result.reset = error.code ?? error.message;
    });
    socket.on('close', () => {
      if (finished) return;
      result.closed = true;
      take(true);
      finish();
    });
  });
}
