/**
 * CommitWatch decides when SqliteStorage's key cache is dropped, so it must never miss a commit: from this
 * connection, another connection, or another process (what `keys revoke` is). It may report a change that
 * did not happen; it must not miss one that did.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { CommitWatch } from '../src/storage/sqlite-commit-watch.js';

const execFileAsync = promisify(execFile);

describe('CommitWatch', () => {
  let dir: string;
  let path: string;
  let db: Database.Database;
  let other: Database.Database;
  let watch: CommitWatch;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'pet-adoption-commit-watch-'));
    path = join(dir, 'watch.db');
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    other = new Database(path);
    watch = new CommitWatch(db, path);
  });

  after(() => {
    watch.close();
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('reads the WAL-index header of a file database', () => {
    assert.equal(watch.method, 'wal-index');
  });

  test('the first call reports a change, then nothing until something commits', () => {
    assert.equal(watch.changed(), true);
    assert.equal(watch.changed(), false);
    other.prepare('SELECT count(*) FROM t').get();
    db.prepare('SELECT count(*) FROM t').get();
    assert.equal(watch.changed(), false, 'reads are not commits');
  });

  test('sees a commit on another connection, once', () => {
    watch.changed();
    other.prepare('INSERT INTO t (v) VALUES (?)').run('other');
    assert.equal(watch.changed(), true);
    assert.equal(watch.changed(), false);
  });

  test('sees a commit on its own connection', () => {
    watch.changed();
    db.prepare('INSERT INTO t (v) VALUES (?)').run('own');
    assert.equal(watch.changed(), true);
  });

  test('sees every one of many commits between two reads of a busy database', () => {
    for (let i = 0; i < 200; i++) {
      watch.changed();
      (i % 2 ? db : other).prepare('INSERT INTO t (v) VALUES (?)').run(`n${i}`);
      assert.equal(watch.changed(), true, `commit ${i}`);
    }
  });

  test('sees a commit made after a checkpoint reset the WAL', () => {
    other.pragma('wal_checkpoint(TRUNCATE)');
    watch.changed();
    other.prepare('INSERT INTO t (v) VALUES (?)').run('after reset');
    assert.equal(watch.changed(), true);
  });

  test('sees a commit from another process', async () => {
    watch.changed();
    const script =
      "const Database = require('better-sqlite3'); const db = new Database(process.argv[1]);" +
      "db.prepare('INSERT INTO t (v) VALUES (?)').run('child'); db.close();";
    await execFileAsync(process.execPath, ['-e', script, path], { cwd: process.cwd() });
    assert.equal(watch.changed(), true);
    assert.equal(watch.changed(), false);
  });
});

describe('CommitWatch without a WAL-index file', () => {
  test('falls back to PRAGMA data_version for an in-memory database', () => {
    const db = new Database(':memory:');
    const watch = new CommitWatch(db, ':memory:');
    try {
      assert.equal(watch.method, 'data_version');
      assert.equal(watch.changed(), true);
      assert.equal(watch.changed(), false);
    } finally {
      watch.close();
      db.close();
    }
  });

  test('falls back to PRAGMA data_version, and still sees other connections, outside WAL mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-commit-watch-'));
    const path = join(dir, 'rollback.db');
    const db = new Database(path);
    const other = new Database(path);
    const watch = new CommitWatch(db, path);
    try {
      assert.equal(watch.method, 'data_version');
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      watch.changed();
      assert.equal(watch.changed(), false);
      other.prepare('INSERT INTO t DEFAULT VALUES').run();
      assert.equal(watch.changed(), true);
    } finally {
      watch.close();
      other.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
