/**
 * The lint's rules about the code's shape reject what they promise to: an import circle, a module reaching
 * into another's files, a repository reaching src/http through a file it imports, a source file over 400
 * lines. Each rule runs through the real tool (dependency-cruiser's CLI with the repository's own
 * configurations, ESLint's API with eslint.config.js) on a small fixture, and a clean fixture passes, so a
 * rule that stopped matching anything fails here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('..', import.meta.url));
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A throwaway tree laid out like the repository (so the rules' paths match), with the given files. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lint-fixture-'));
  dirs.push(dir);
  const all = { 'tsconfig.test.json': '{ "compilerOptions": { "module": "NodeNext" } }', ...files };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** The rule names dependency-cruiser reports on the tree with one of the repository's configurations. */
function violations(dir: string, config: string): string[] {
  const run = spawnSync(depcruise, ['src', '--config', join(root, config), '--output-type', 'json'], {
    cwd: dir,
    encoding: 'utf8',
  });
  const result = JSON.parse(run.stdout) as { summary: { violations: { rule: { name: string } }[] } };
  return result.summary.violations.map((violation) => violation.rule.name).sort();
}

const value = (name: string) => `export const ${name} = 1;\n`;

test('dependency-cruiser refuses an import circle (and not an import line)', () => {
  const circle = tree({
    'src/modules/a/one.ts': `import { two } from './two.js';\n${value('one')}export const sum = two + 1;\n`,
    'src/modules/a/two.ts': `import { one } from './one.js';\n${value('two')}export const sum = one + 1;\n`,
  });
  assert.deepEqual(violations(circle, '.dependency-cruiser.cjs'), ['no-circular']);
  const line = tree({
    'src/modules/a/one.ts': `import { two } from './two.js';\nexport const one = two + 1;\n`,
    'src/modules/a/two.ts': value('two'),
  });
  assert.deepEqual(violations(line, '.dependency-cruiser.cjs'), []);
});

test("dependency-cruiser refuses an import of another module's file other than its index.ts", () => {
  const dir = tree({
    'src/modules/b/internal.ts': value('internal'),
    'src/modules/b/index.ts': `export { internal } from './internal.js';\n`,
    'src/modules/a/good.ts': `import { internal } from '../b/index.js';\nexport const good = internal;\n`,
    'src/modules/a/bad.ts': `import { internal } from '../b/internal.js';\nexport const bad = internal;\n`,
    'src/cli/bad.ts': `import { internal } from '../modules/b/internal.js';\nexport const cli = internal;\n`,
  });
  assert.deepEqual(violations(dir, '.dependency-cruiser.cjs'), [
    'modules-meet-through-index',
    'the-rest-meets-modules-through-index',
  ]);
});

test('dependency-cruiser refuses a repository that reaches src/http through a file it imports', () => {
  const dir = tree({
    'src/http/paging.ts': value('paging'),
    'src/modules/a/schemas.ts': `import { paging } from '../../http/paging.js';\nexport const shape = paging;\n`,
    'src/modules/a/repository.ts': `import { shape } from './schemas.js';\nexport const repository = shape;\n`,
    // A type-only import is erased at run time: no path to src/http.
    'src/modules/a/decisions.ts': `import type { shape } from './schemas.js';\nexport type Shape = typeof shape;\n`,
  });
  // The direct rule sees no import of src/http; the run-time pass follows schemas.ts there.
  assert.deepEqual(violations(dir, '.dependency-cruiser.cjs'), []);
  assert.deepEqual(violations(dir, '.dependency-cruiser.runtime.cjs'), ['data-does-not-reach-http']);
});

test('ESLint refuses a source file over 400 lines, blank lines and comments included', async () => {
  const eslint = new ESLint({ cwd: root });
  const file = (lines: number) => `${'// a line\n'.repeat(lines - 1)}export const last = 1;\n`;
  const ruleIds = async (text: string, filePath: string) =>
    (await eslint.lintText(text, { filePath: join(root, filePath) })).flatMap((r) =>
      r.messages.map((m) => m.ruleId),
    );
  assert.deepEqual(await ruleIds(file(401), 'src/modules/a/long.ts'), ['max-lines']);
  assert.deepEqual(await ruleIds(file(400), 'src/modules/a/long.ts'), []);
  assert.deepEqual(await ruleIds(file(401), 'packages/client/src/long.ts'), ['max-lines']);
  assert.deepEqual(await ruleIds(file(401), 'packages/client/src/generated/long.ts'), []);
});
