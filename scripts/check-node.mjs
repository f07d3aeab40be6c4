/**
 * `npm start`'s and `npm test`'s first step: on a Node.js the service does not support, one line naming the
 * supported versions and exit 1, instead of a native module's load error or a missing API further on.
 * (`npm ci` refuses an unsupported Node by itself: the project's .npmrc sets engine-strict.)
 * Dependency-free on purpose: it runs before anything is built, and in production before dev tools exist.
 */
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/**
 * The oldest supported release; package.json's `engines` says the same (test/runtime.test.ts checks). 22.14
 * is the first 22 with Node-API 10, which better-sqlite3's prebuilt binary needs (on an older Node it does not
 * fail to load: it crashes the process).
 */
export const MINIMUM = '22.14.0';
export const SUPPORTED = `Node.js 24 LTS (or 22.14 and later)`;

/** Why `version` (as in process.versions.node) cannot run the service, or undefined when it can. */
export function unsupported(version) {
  const [major, minor, patch] = version.split('.').map(Number);
  const [minMajor, minMinor, minPatch] = MINIMUM.split('.').map(Number);
  const ok =
    major !== minMajor ? major > minMajor : minor !== minMinor ? minor > minMinor : patch >= minPatch;
  return ok
    ? undefined
    : `This is Node.js ${version}; the Pet Adoption Service needs ${SUPPORTED}; \`nvm use\` picks 24 from .nvmrc.`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const message = unsupported(process.versions.node);
  if (message) {
    process.stderr.write(`${message}\n`);
    process.exit(1);
  }
}
