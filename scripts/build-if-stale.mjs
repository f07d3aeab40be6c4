/**
 * `npm start`'s prestart: builds only when dist/ is missing or older than a source file. A fresh clone's
 * `npm ci` has built already (`prepare`), so starting costs no compile (tsc takes seconds to tens of
 * seconds); a contributor who edited src/ still never starts stale code. Dependency-free on purpose: it
 * runs before anything else.
 */
import { execSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

let built = 0;
try {
  built = statSync(join(root, 'dist', 'cli.js')).mtimeMs;
} catch {
  // Not built yet.
}
const sources = Math.max(newest(join(root, 'src')), newest(join(root, 'tsconfig.json')));
if (sources > built) {
  process.stderr.write(
    built === 0 ? 'dist/ is missing: building…\n' : 'src/ changed since the last build: building…\n',
  );
  execSync('npm run build', { cwd: root, stdio: 'inherit' });
}
