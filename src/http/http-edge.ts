/**
 * The edge of HTTP, below Fastify: what Node's own parser and server would otherwise answer by themselves
 * (malformed request lines, header overflow, timeouts, CONNECT, HTTP/0.9, a missing Host) gets the Error
 * shape with an X-Request-Id and nosniff, promptly, and then the connection closes.
 */
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './error-handler.js';
import { ApiError, errorBody, type ErrorCode } from './errors.js';
import { requestId } from './observability.js';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/** A complete answer written straight to the socket, for requests that never became a Fastify request. */
export function rawErrorResponse(error: ApiError): string {
  const body = JSON.stringify(errorBody(error));
  return (
    `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? 'Bad Request'}\r\n` +
    `Connection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `X-Content-Type-Options: nosniff\r\nX-Request-Id: ${requestId(undefined)}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function codeFor(error: NodeJS.ErrnoException): ErrorCode {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request_timeout';
  if (error.code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  return 'bad_request';
}

/** Each connection's latest response (see guardConnections). */
const responses = new WeakMap<Duplex, ServerResponse>();

/** Answers once, unless the request being read was answered already (e.g. a 401 before its body), then closes. */
function answerAndClose(socket: Duplex, error: ApiError): void {
  const latest = responses.get(socket);
  if (latest !== undefined && latest.req.complete && !latest.writableFinished && !latest.destroyed) {
    // A pipelined request before the bad bytes is still being served: its answer goes first, then this one
    // (answers on a connection must keep the order of the requests).
    latest.once('close', () => answerAndClose(socket, error));
    return;
  }
  const answered = latest !== undefined && latest.headersSent && !latest.req.complete;
  if (!socket.writable || socket.writableEnded || answered) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(error));
  // A client that never reads must not hold the socket open.
  (socket as Partial<Socket>).setTimeout?.(5_000, () => socket.destroy());
}

/** Fastify's clientErrorHandler: parser errors, header overflow and Node's header/request timeouts. */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET') return void socket.destroy();
  answerAndClose(socket, new ApiError(codeFor(error)));
}

/** The longest request line worth looking at before the parser's own limits take over. */
const MAX_LINE = 16 * 1024;
/** A request line that names a version; anything else on a first line is HTTP/0.9 or garbage. */
const VERSIONED = /^[!#$%&'*+.^`|~\w-]+ \S+ HTTP\/1\.[01]\r?$/;

/**
 * Node answers no CONNECT (it closes the socket) and waits for headers after an HTTP/0.9 request line
 * (`GET /`) until the header timeout. Both are answered here at once. The request line is read from the
 * first bytes of each request: the connection's first chunk, and the first one after each answer.
 */
export function guardConnections(server: Server): void {
  server.on('connect', (_req, socket: Duplex) => {
    answerAndClose(socket, new ApiError('bad_request', 'CONNECT is not supported: this is not a proxy.'));
  });

  /** Per connection: the start of the request line read so far, or undefined when not at a request's start. */
  const lines = new WeakMap<Socket, string | undefined>();
  server.on('connection', (socket: Socket) => {
    lines.set(socket, '');
    socket.on('data', (chunk: Buffer) => {
      let line = lines.get(socket);
      if (line === undefined) return;
      // Node's parser saw this chunk first; if it already answered (a parse error), there is nothing to do.
      if (socket.writableEnded || socket.destroyed) return void lines.set(socket, undefined);
      line = (line + chunk.toString('latin1', 0, Math.min(chunk.length, MAX_LINE))).replace(/^(\r?\n)+/, '');
      const end = line.indexOf('\n');
      if (end === -1 && line.length < MAX_LINE) return void lines.set(socket, line);
      lines.set(socket, undefined);
      if (!VERSIONED.test(end === -1 ? line : line.slice(0, end))) {
        answerAndClose(
          socket,
          new ApiError('bad_request', 'The request line must end in HTTP/1.0 or HTTP/1.1.'),
        );
      }
    });
  });
  // The next request on a kept-alive connection starts after this answer.
  server.on('request', (req, res) => {
    responses.set(req.socket, res);
    // The parser made a request of it (this runs before the 'data' listener above): the onRequest check
    // answers it, in Fastify, so nothing is written to the socket twice.
    lines.set(req.socket, undefined);
    res.once('finish', () => lines.set(req.socket, ''));
  });
}

/**
 * HTTP/1.1 requires Host. Node's own check answers an empty 400, so it is off (`requireHostHeader: false`)
 * and the check is made here, after the request id and with the caller's address quota applied.
 */
export function registerHostCheck(
  app: FastifyInstance,
  countByAddress: (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>,
): void {
  app.addHook('onRequest', async (request, reply) => {
    const raw = request.raw;
    const missingHost = raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1 && !raw.headers.host;
    if (!missingHost && raw.httpVersionMajor === 1) return;
    reply.header('connection', 'close').header('x-content-type-options', 'nosniff');
    const error = new ApiError(
      'bad_request',
      missingHost ? 'HTTP/1.1 requests must carry a Host header.' : 'Only HTTP/1.0 and HTTP/1.1 are served.',
    );
    const allowed = await countByAddress(request, reply).catch(() => true);
    return sendError(reply, allowed ? error : new ApiError('rate_limited'));
  });
}
