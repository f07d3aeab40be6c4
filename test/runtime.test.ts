/**
 * The supported runtime is Node.js 24 LTS (22.14 and later run it too), and every place that names a version
 * says the same: package.json's engines, .nvmrc, the Dockerfile's images, CI's Node and the check that
 * `npm start` and `npm test` run first. On an older Node that check stops with one line, before anything
 * loads a native module built for another version.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { MINIMUM, unsupported } from '../scripts/check-node.mjs';
import { ROOT } from '../support/processes.js';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

describe('the runtime check', () => {
  test('refuses Node 18, 20, and 22 before 22.14, naming the supported versions in one line', () => {
    for (const version of ['18.20.8', '20.20.2', '22.12.0', '22.13.1', '21.7.3', '8.0.0']) {
      const message = unsupported(version);
      assert.ok(message, version);
      assert.match(message, new RegExp(`^This is Node\\.js ${version.replaceAll('.', '\\.')};`));
      assert.match(message, /Node\.js 24 LTS \(or 22\.14 and later\)/);
      assert.doesNotMatch(message, /\n/);
    }
  });

  test('accepts 22.14 and later, 24 and newer majors', () => {
    for (const version of ['22.14.0', '22.22.1', '23.0.0', '24.0.0', '24.21.0', '25.2.1', '100.0.0']) {
      assert.equal(unsupported(version), undefined, version);
    }
  });

  test('run as a script under this Node: exit 0 when supported, else one line on stderr and exit 1', () => {
    const result = spawnSync(process.execPath, [join(ROOT, 'scripts', 'check-node.mjs')], {
      encoding: 'utf8',
    });
    const message = unsupported(process.versions.node);
    if (message === undefined) {
      assert.equal(result.status, 0, result.stderr);
      assert.equal(result.stderr, '');
    } else {
      assert.equal(result.status, 1);
      assert.equal(result.stderr, `${message}\n`);
    }
    assert.equal(result.stdout, '');
  });
});

describe('every place names the same runtime', () => {
  const pkg = JSON.parse(read('package.json')) as {
    engines: { node: string };
    scripts: Record<string, string>;
  };

  test('package.json: engines from the minimum; start and test check the runtime first', () => {
    assert.equal(pkg.engines.node, `>=${MINIMUM.replace(/\.0$/, '')}`);
    assert.match(pkg.scripts.prestart!, /^node scripts\/check-node\.mjs && /);
    assert.equal(pkg.scripts.pretest, 'node scripts/check-node.mjs');
  });

  test('npm ci refuses an unsupported Node by itself (engine-strict)', () => {
    assert.match(read('.npmrc'), /^engine-strict=true$/m);
  });

  test('.nvmrc, the Dockerfile and CI name Node 24', () => {
    assert.equal(read('.nvmrc').trim(), '24');
    const images = [...read('Dockerfile').matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1]);
    assert.ok(images.length >= 2);
    for (const image of images) assert.match(image!, /^node:24-/);
    assert.match(read('.ci/node.sh'), /^CI_NODE_VERSION="\$\{CI_NODE_VERSION:-24\.\d+\.\d+\}"$/m);
    assert.match(read('.ci/run'), /^source \.ci\/node\.sh$/m);
  });
});
