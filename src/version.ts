import { readFileSync } from 'node:fs';

/** The package's version; package.json sits one level above both src/ (tsx) and dist/ (built). */
export const SERVICE_VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
