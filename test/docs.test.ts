/** The README is the front door: it must show the two commands and every error code the service can answer with. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { errorCatalogue } from '../src/http/errors.js';
import { SCOPES } from '../src/modules/accounts/scopes.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

test('README shows the two front-door commands', () => {
  assert.match(readme, /npm ci && npm start/);
  assert.match(readme, /npm ci && npm test/);
});

test('README documents every error code with its status', () => {
  for (const [code, { status }] of Object.entries(errorCatalogue)) {
    // Table cells may be padded by the formatter.
    assert.match(readme, new RegExp(`\\| \`${code}\` +\\| ${status} +\\|`), code);
  }
});

test('every catalogue code is snake_case and its status an HTTP error status', () => {
  for (const [code, { status }] of Object.entries(errorCatalogue)) {
    assert.match(code, /^[a-z]+(_[a-z]+)*$/);
    assert.ok(status >= 400 && status <= 599, code);
  }
});

test('README describes every scope in its Scopes table', () => {
  const section = readme.slice(readme.indexOf('\n## Scopes\n'));
  assert.ok(section.length > 1, 'a Scopes section');
  for (const scope of SCOPES) assert.match(section, new RegExp(`\\| \`${scope}\` +\\|`), scope);
});

test('README documents every environment variable src/config.ts reads', () => {
  const source = readFileSync(new URL('../src/config.ts', import.meta.url), 'utf8');
  const names = new Set([...source.matchAll(/\benv(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!));
  assert.ok(names.has('PUBLIC_URL') && names.has('PORT'), 'the pattern finds the variables');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  for (const name of names) assert.match(section, new RegExp(`\\| \`${name}\` +\\|`), name);
});
