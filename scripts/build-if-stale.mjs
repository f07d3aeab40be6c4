/**
 * `npm start`'s prestart and `npm ci`'s prepare: builds only when a built output is missing or older than
 * its sources. A fresh clone's `npm ci` builds once, so starting costs no compile (tsc takes seconds to
 * tens of seconds); a contributor who edited src/ still never starts stale code.
 *
 * A production install holds the built output and no sources (`npm ci --omit=dev`, no TypeScript on the
 * machine): with nothing to build from, nothing is built, and `npm start` serves what is there.
 * Dependency-free on purpose: it runs before anything else, and in production before dev tools exist.
 */
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Newest modification time under `path`; 0 when it does not exist. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** What `npm run build` makes, each with what it is made from. */
const outputs = [
  { built: 'dist/cli.js', from: ['src', 'tsconfig.json'] },
  { built: 'packages/client/dist/index.js', from: ['packages/client/src', 'packages/client/tsconfig.json'] },
];

const stale = outputs.filter(({ built, from }) => {
  const sources = Math.max(...from.map((path) => newest(join(root, path))));
  // No sources: a production install, or a copy without this package; nothing to build from.
  return sources > 0 && sources > newest(join(root, built));
});
if (stale.length > 0) {
  const missing = stale.some(({ built }) => !existsSync(join(root, built)));
  process.stderr.write(
    missing ? 'dist/ is missing: building…\n' : 'src/ changed since the last build: building…\n',
  );
  execSync('npm run build', { cwd: root, stdio: 'inherit' });
}
