/**
 * Raw HTTP/1.1 over a socket, for what app.inject and fetch cannot send: odd request targets
 * (absolute-form, `//v1/…`, dot segments), malformed request lines, missing Host, slow senders.
 */
import net from 'node:net';

export interface RawResponse {
  /** 0 when the connection closed without a parsable status line. */
  status: number;
  /** Lower-cased names; the last value wins for repeated headers. */
  headers: Record<string, string>;
  body: string;
  /** Everything the server sent. */
  raw: string;
}

/** Parses the first response in `raw` (headers and, when Content-Length is known, its body). */
export function parseResponse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  const head = end === -1 ? raw : raw.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = end === -1 ? '' : raw.slice(end + 4);
  const length = Number(headers['content-length']);
  if (Number.isInteger(length)) body = Buffer.from(body).subarray(0, length).toString();
  return { status, headers, body, raw };
}

/**
 * Writes `request` as is and resolves with what came back once the server closes the connection (send
 * `Connection: close`) or `timeoutMs` passes; a bound only so a hang fails the test instead of stalling it.
 */
export function rawRequest(port: number, request: string | Buffer, timeoutMs = 5_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms: ${Buffer.concat(chunks).toString()}`));
    }, timeoutMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks).toString()));
    });
  });
}
