import { closeSync, openSync, readSync } from 'node:fs';
import type Database from 'better-sqlite3';

/** The WAL-index header: two 48-byte copies at the start of the -shm file (https://sqlite.org/walformat.html). */
const HEADER_BYTES = 48;
/** iVersion, the header's first field, for every SQLite release since WAL mode appeared (3.7.0). */
const WAL_INDEX_VERSION = 3007000;
/** Offset of isInit, set to 1 once the header is valid. */
const IS_INIT_OFFSET = 12;

/**
 * Tells whether anything (any connection, any process) has committed to a WAL-mode SQLite database since
 * the previous call, exactly and for the price of one 96-byte pread.
 *
 * Why not only `PRAGMA data_version`, the documented way: each call is a read transaction (fcntl locks and
 * unlocks, an fstat), and measured inside the service it was the largest single cost of authenticating a
 * request (~15–20 µs of ~120). Every commit rewrites the WAL-index header in the -shm file (mxFrame, the
 * iChange counter; a WAL reset changes the salts), and that format is shared by every SQLite version that
 * opens the database concurrently, so it cannot change under us. Any difference from the last snapshot,
 * including a torn read of a header being written, counts as a change: the answer can only err towards
 * "changed". A header that does not look valid falls back to `PRAGMA data_version`, as do databases with
 * no -shm file (in memory, or not in WAL mode).
 */
export class CommitWatch {
  /** How changes are detected: the -shm header, or the fallback. */
  readonly method: 'wal-index' | 'data_version';
  private readonly fd: number | undefined;
  private readonly snapshot = Buffer.alloc(2 * HEADER_BYTES);
  private readonly reading = Buffer.alloc(2 * HEADER_BYTES);
  private readonly dataVersion: Database.Statement<[], number>;
  private lastDataVersion = -1;

  constructor(db: Database.Database, path: string) {
    this.dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck(true);
    const walMode = db.pragma('journal_mode', { simple: true }) === 'wal';
    if (walMode && path !== ':memory:' && path !== '') {
      try {
        this.fd = openSync(`${path}-shm`, 'r');
      } catch {
        this.fd = undefined;
      }
    }
    this.method = this.fd === undefined ? 'data_version' : 'wal-index';
  }

  /** True when a commit happened since the previous call; the first call answers true. */
  changed(): boolean {
    const byHeader = this.changedByHeader();
    if (byHeader !== undefined) return byHeader;
    const version = this.dataVersion.get()!;
    const changed = version !== this.lastDataVersion;
    this.lastDataVersion = version;
    return changed;
  }

  /** undefined when the header cannot be read or does not look valid. */
  private changedByHeader(): boolean | undefined {
    if (this.fd === undefined) return undefined;
    let read: number;
    try {
      read = readSync(this.fd, this.reading, 0, this.reading.length, 0);
    } catch {
      return undefined;
    }
    if (read < this.reading.length) return undefined;
    const version = this.reading.readUInt32LE(0);
    const versionBE = this.reading.readUInt32BE(0);
    const valid =
      (version === WAL_INDEX_VERSION || versionBE === WAL_INDEX_VERSION) &&
      this.reading[IS_INIT_OFFSET] === 1;
    if (!valid) return undefined;
    if (this.reading.equals(this.snapshot)) return false;
    this.reading.copy(this.snapshot);
    return true;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
  }
}
