/**
 * The documentation must stay true to the code: the README shows the two front-door commands, the API guide
 * every error code and scope, the operations guide every environment variable, and every relative link in the
 * docs leads somewhere.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { errorCatalogueOf, settingsOf } from '../src/modules/declared.js';
import { MODULES } from '../src/modules/index.js';
import { allScopes } from '../src/modules/accounts/scopes.js';
import { createTestContext, sqliteMemory } from './helpers.js';

/** The one error catalogue: the HTTP layer's codes and every module's. */
const errorCatalogue = errorCatalogueOf(MODULES);

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string): string => readFileSync(join(root, path), 'utf8');
const readme = read('README.md');
const api = read('docs/api.md');
const operations = read('docs/operations.md');

/** The text of a `## title` section, up to the next second-level heading. */
function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `a "## ${title}" section`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

test('README shows the two front-door commands', () => {
  assert.match(readme, /npm ci && npm start/);
  assert.match(readme, /npm ci && npm test/);
});

test('README stays a front door', () => {
  assert.ok(readme.split('\n').length <= 250, 'README.md is at most 250 lines; the rest belongs in docs/');
});

test('the API guide documents every error code with its status', () => {
  const errors = section(api, 'Errors');
  for (const [code, { status }] of Object.entries(errorCatalogue)) {
    // Table cells may be padded by the formatter.
    assert.match(errors, new RegExp(`\\| \`${code}\` +\\| ${status} +\\|`), code);
  }
});

test('every catalogue code is snake_case and its status an HTTP error status', () => {
  for (const [code, { status }] of Object.entries(errorCatalogue)) {
    assert.match(code, /^[a-z]+(_[a-z]+)*$/);
    assert.ok(status >= 400 && status <= 599, code);
  }
});

test('the API guide describes every scope in its Scopes table', () => {
  const scopes = section(api, 'Scopes');
  for (const scope of allScopes()) assert.match(scopes, new RegExp(`\\| \`${scope}\` +\\|`), scope);
});

test('the operations guide documents every environment variable src/config.ts reads', () => {
  // config.ts reads its variables through the parsers in config-parsers.ts.
  const source = read('src/config.ts') + read('src/config-parsers.ts');
  // The service's own, read in config.ts, and the modules' (ApiModule.settings), merged in there.
  const names = new Set([
    ...[...source.matchAll(/\benv(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!),
    ...settingsOf(MODULES).map((setting) => setting.name),
  ]);
  assert.ok(names.has('PUBLIC_URL') && names.has('PORT'), 'the pattern finds the variables');
  assert.ok(names.has('MAX_OPEN_ORDERS'), "the modules' variables are found");
  const configuration = section(operations, 'Configuration');
  for (const name of names) assert.match(configuration, new RegExp(`\\| \`${name}\` +\\|`), name);
});

/** The repository's Markdown files, outside dependencies and build output. */
function markdownFiles(dir = root): string[] {
  const skip = new Set(['node_modules', 'dist', '.git', 'data', 'test-artifacts']);
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (skip.has(name)) return [];
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** Markdown without its fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for each heading of a Markdown file. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  // Inline code in a heading keeps its text in GitHub's anchor (`capacity.ts` gives capacityts).
  const headings = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`([^`\n]*)`/g, '$1');
  for (const [, heading] of headings.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

test('every relative link in the Markdown files leads to an existing file and heading', () => {
  const files = markdownFiles();
  for (const must of ['README.md', 'CONTRIBUTING.md', 'docs/api.md', 'docs/operations.md']) {
    assert.ok(files.includes(join(root, must)), `${must} is scanned`);
  }
  let checked = 0;
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const [, target] of prose(text).matchAll(/\[[^\]]*\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // http:, https:, mailto:
      const where = `${relative(root, file)} → ${target}`;
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const destination = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
      assert.ok(destination.startsWith(root), `${where}: the link leaves the repository`);
      assert.ok(existsSync(destination), `${where}: no such file`);
      if (anchor !== undefined && destination.endsWith('.md')) {
        assert.ok(anchors(readFileSync(destination, 'utf8')).has(anchor), `${where}: no such heading`);
      }
      checked++;
    }
  }
  assert.ok(checked > 20, 'the pattern finds the links');
});

test('no Markdown file points outside the repository for what the project relies on', () => {
  for (const file of markdownFiles()) {
    assert.doesNotMatch(readFileSync(file, 'utf8'), /\.\.\/shared\b/, relative(root, file));
  }
});

test("the README's table of what the API offers names every group of the OpenAPI document", async () => {
  const ctx = await createTestContext(sqliteMemory);
  try {
    const document = (await ctx.app.inject({ url: '/v1/openapi.json' })).json() as { paths: object };
    const start = readme.indexOf('### What the API offers');
    const table = readme.slice(start, readme.indexOf('\n\n', readme.indexOf('| Group', start)));
    // A group is a path's first segment, or what hangs off one pet (its profile, its photos).
    const groups = new Set<string>();
    for (const path of Object.keys(document.paths)) {
      const [first, , under] = path.replace(/^\/v1/, '').split('/').slice(1);
      groups.add(first!);
      if (first === 'pets' && under !== undefined) groups.add(under);
    }
    for (const group of groups) {
      if (group === 'openapi.json' || group === 'docs') continue;
      assert.match(
        table,
        new RegExp(`/${group.replace('.', '\\.')}\\b`),
        `the README's table names /${group}`,
      );
    }
  } finally {
    await ctx.close();
  }
});
