/**
 * The storefront's own web server. It must listen before the service starts (its origin is what the service's
 * CORS_ORIGINS allows), but the page works only once the example's setup has ended (migrations, the demo key,
 * the service, the first seed, which takes about half a minute). Until then every path answers 503 with
 * `Retry-After`, and the page's address serves a "starting…" page that reloads itself when `/ready`, held
 * open until the setup ends, answers: a person who opens the page early waits instead of meeting a broken one.
 */
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** A file the site serves at one path. */
export interface Asset {
  type: string;
  body: Buffer | string;
}

/** The handler of one path the page calls on this server (the apply form's); it answers any method. */
export type Action = (request: IncomingMessage, response: ServerResponse) => Promise<void>;

/** Requests held on /ready at once; more are answered 503 at once (the page's refresh takes over). */
const MAX_WAITING = 100;

export interface Site {
  origin: string;
  /** Setup has ended: from now on the page, its files, `extra` (config.js) and the actions are served. */
  ready(extra: Record<string, Asset>, actions?: Record<string, Action>): void;
  close(): void;
}

/** Serves `files` from `dir` (each at `/<name>`, index.html also at `/`) on `port` of 127.0.0.1. */
export async function startSite(dir: string, names: string[], port: number): Promise<Site> {
  const files: Record<string, Asset> = {};
  for (const name of names) {
    files[`/${name}`] = {
      type: TYPES[name.slice(name.lastIndexOf('.'))]!,
      body: await readFile(join(dir, name)),
    };
  }
  files['/'] = files['/index.html']!;
  const starting = await readFile(join(dir, 'starting.html'));
  let actions: Record<string, Action> = {};
  let isReady = false;
  const waiting = new Set<ServerResponse>();

  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/ready' && (request.method === 'GET' || request.method === 'HEAD')) {
      if (isReady) response.writeHead(204, { 'cache-control': 'no-store' }).end();
      else if (waiting.size >= MAX_WAITING) unavailable(response, 'text/plain', 'starting\n');
      else {
        waiting.add(response);
        response.once('close', () => waiting.delete(response));
      }
      return;
    }
    if (!isReady) {
      const page = path === '/' || path === '/index.html';
      unavailable(response, page ? TYPES['.html']! : 'text/plain', page ? starting : 'starting\n');
      return;
    }
    const action = actions[path];
    if (action !== undefined) {
      action(request, response).catch(() => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
        response.end();
      });
      return;
    }
    const file = files[path];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
    } else if (file === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    } else {
      response
        .writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' })
        .end(request.method === 'HEAD' ? undefined : file.body);
    }
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');

  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ready(extra, more = {}) {
      Object.assign(files, extra);
      actions = more;
      isReady = true;
      for (const response of waiting) response.writeHead(204, { 'cache-control': 'no-store' }).end();
      waiting.clear();
    },
    close() {
      for (const response of waiting) response.destroy();
      server.close();
    },
  };
}

function unavailable(response: ServerResponse, type: string, body: Buffer | string): void {
  response
    .writeHead(503, { 'content-type': type, 'cache-control': 'no-store', 'retry-after': '5' })
    .end(body);
}
