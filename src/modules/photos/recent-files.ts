/**
 * The renderings served last, kept in memory up to a budget of bytes (least recently served dropped
 * first). The bytes behind a photo id and size never change, so a kept copy is never stale; whether the
 * photo still exists is the caller's to check (a cheap indexed lookup instead of reading the bytes again).
 */
export class RecentFiles {
  private readonly files = new Map<string, Buffer>();
  private bytes = 0;

  /** @param budget total bytes kept; @param largest a file larger than this is not kept. */
  constructor(
    private readonly budget: number,
    private readonly largest: number,
  ) {}

  get(key: string): Buffer | undefined {
    const file = this.files.get(key);
    if (file !== undefined) {
      // Map keeps insertion order: moved to the end, it is the most recently served.
      this.files.delete(key);
      this.files.set(key, file);
    }
    return file;
  }

  set(key: string, file: Buffer): void {
    if (file.length > this.largest || this.files.has(key)) return;
    this.files.set(key, file);
    this.bytes += file.length;
    for (const [oldest, dropped] of this.files) {
      if (this.bytes <= this.budget) break;
      this.files.delete(oldest);
      this.bytes -= dropped.length;
    }
  }

  delete(key: string): void {
    const file = this.files.get(key);
    if (file === undefined) return;
    this.files.delete(key);
    this.bytes -= file.length;
  }
}
