/**
 * PUBLIC_URL (docs/operations.md): every `Location` and `Link` the service writes is root-relative (`/v1/pets/7`,
 * `</v1/pets?…>; rel="next"`); with a public URL configured they become absolute
 * (`https://api.example.com/v1/pets/7`), so a client can follow them whatever base URL it was given, and
 * production and staging differ only in this setting. Done once, in an onSend hook, rather than in each
 * route: no route or future route can forget it, and replays of stored answers get it too.
 */
import type { FastifyInstance } from 'fastify';

/** `/v1/x` → `<publicUrl>/v1/x`; anything already absolute (or not a path) is left alone. */
export function absoluteLocation(publicUrl: string, value: string): string {
  return value.startsWith('/') && !value.startsWith('//') ? `${publicUrl}${value}` : value;
}

/** Each `</path…>` target of a Link field value made absolute; parameters and absolute targets untouched. */
export function absoluteLink(publicUrl: string, value: string): string {
  return value.replace(/<(\/(?!\/)[^>]*)>/g, (_, path: string) => `<${publicUrl}${path}>`);
}

export function registerPublicUrl(app: FastifyInstance, publicUrl: string | undefined): void {
  if (publicUrl === undefined) return;
  // Callback style: this hook runs for every response.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const location = reply.getHeader('location');
    if (typeof location === 'string') reply.header('location', absoluteLocation(publicUrl, location));
    const link = reply.getHeader('link');
    if (typeof link === 'string') reply.header('link', absoluteLink(publicUrl, link));
    done(null, payload);
  });
}
