/**
 * Raw HTTP over a plain TCP socket, for what fetch and node:http will not send: malformed request lines,
 * missing Host, HTTP/0.9, CONNECT, trickled headers and bodies. Waits on the socket's events only.
 */
import net from 'node:net';

export interface RawAnswer {
  /** Everything the server wrote before closing. */
  raw: string;
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
  /** The socket ended because the server closed it (not because of `withinMs`). */
  closedByServer: boolean;
  /** A socket error (e.g. ECONNRESET) seen before the close. */
  error: string | undefined;
}

export interface RawOptions {
  /** Further pieces to send, one every `gapMs`: the pace of a slow client, not a wait for anything. */
  trickle?: { pieces: string[]; gapMs: number };
  /** Guard only: a server that neither answers nor closes fails the test instead of stalling it. */
  withinMs?: number;
}

export function parseRaw(raw: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  const split = raw.indexOf('\r\n\r\n');
  const head = split === -1 ? raw : raw.slice(0, split);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    status: status ? Number(status) : undefined,
    headers,
    body: split === -1 ? '' : raw.slice(split + 4),
  };
}

/**
 * Connects, writes `request` (and any trickled pieces, paced by a timer as a slow client would), and
 * resolves when the server closes the connection.
 */
export function rawExchange(port: number, request: string, options: RawOptions = {}): Promise<RawAnswer> {
  const withinMs = options.withinMs ?? 10_000;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = '';
    let error: string | undefined;
    let pacing: NodeJS.Timeout | undefined;
    const guard = setTimeout(() => finish(false), withinMs);
    const finish = (closedByServer: boolean): void => {
      clearTimeout(guard);
      clearInterval(pacing);
      socket.destroy();
      resolve({ raw, ...parseRaw(raw), closedByServer, error });
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => finish(true));
    socket.once('connect', () => {
      socket.write(request);
      const pieces = [...(options.trickle?.pieces ?? [])];
      if (pieces.length === 0) return;
      pacing = setInterval(() => {
        const piece = pieces.shift();
        if (piece === undefined || socket.destroyed) return clearInterval(pacing);
        socket.write(piece);
      }, options.trickle!.gapMs);
    });
  });
}

/**
 * The answers a server writes on a kept-alive connection, one whole answer (head and Content-Length body)
 * per `next()`, parsed; waits on the socket's data only.
 */
export function keptAliveAnswers(socket: net.Socket): {
  next(): Promise<Pick<RawAnswer, 'status' | 'headers' | 'body'>>;
} {
  let buffered = '';
  const waiting: (() => void)[] = [];
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (const wake of waiting.splice(0)) wake();
  });
  const take = (): string | undefined => {
    const headEnd = buffered.indexOf('\r\n\r\n');
    if (headEnd === -1) return undefined;
    const length = Number(/^content-length: (\d+)\r$/im.exec(buffered.slice(0, headEnd))?.[1] ?? 0);
    const end = headEnd + 4 + length;
    if (buffered.length < end) return undefined;
    const answer = buffered.slice(0, end);
    buffered = buffered.slice(end);
    return answer;
  };
  return {
    async next() {
      for (;;) {
        const answer = take();
        if (answer !== undefined) return parseRaw(answer);
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
    },
  };
}
