/** Memory of a server process: its resident set over time (from /proc) and the heap it reports on /metrics. */
import { readFileSync } from 'node:fs';

interface MemorySample {
  t: number;
  rssKb: number;
}

/** Samples VmRSS of one process every 250 ms; VmHWM (the kernel's own peak) is read on demand. */
export class MemoryWatch {
  readonly samples: MemorySample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 250);
    this.timer.unref();
  }

  private status(): Record<string, number> {
    const out: Record<string, number> = {};
    try {
      for (const line of readFileSync(`/proc/${this.pid}/status`, 'utf8').split('\n')) {
        const m = /^(Vm\w+):\s+(\d+) kB/.exec(line);
        if (m) out[m[1]!] = Number(m[2]);
      }
    } catch {
      // process gone
    }
    return out;
  }

  sample(): number | undefined {
    const rss = this.status().VmRSS;
    if (rss !== undefined) this.samples.push({ t: Date.now(), rssKb: rss });
    return rss;
  }

  /** Peak resident set in MB: the kernel's high-water mark, or the largest sample if that is unavailable. */
  peakMb(): number {
    const hwm = this.status().VmHWM;
    const sampled = Math.max(0, ...this.samples.map((s) => s.rssKb));
    return Math.max(hwm ?? 0, sampled) / 1024;
  }

  /** Mean RSS (MB) of the samples taken in [from, to]. */
  meanMb(from: number, to: number): number {
    const inWindow = this.samples.filter((s) => s.t >= from && s.t <= to);
    if (inWindow.length === 0) return (this.sample() ?? 0) / 1024;
    return inWindow.reduce((a, s) => a + s.rssKb, 0) / inWindow.length / 1024;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** V8 heap and external memory (MB) as the service's own /metrics reports them. */
export async function heapFigures(base: string): Promise<Record<string, number>> {
  const wanted: Record<string, string> = {
    nodejs_heap_size_used_bytes: 'heapUsed',
    nodejs_heap_size_total_bytes: 'heapTotal',
    nodejs_external_memory_bytes: 'external',
    process_resident_memory_bytes: 'rss',
  };
  const out: Record<string, number> = {};
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const line of text.split('\n')) {
      const [name, value] = line.split(' ');
      const label = name ? wanted[name] : undefined;
      if (label && value) out[label] = Math.round(Number(value) / 1e5) / 10;
    }
  } catch {
    // metrics are a bonus here
  }
  return out;
}
