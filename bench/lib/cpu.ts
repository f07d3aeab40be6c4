/** A process's CPU time, read by both load generators' runs. */
import { readFileSync } from 'node:fs';

const CLOCK_TICKS_PER_S = 100;

// USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

/** utime + stime of a process (all its threads) in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}
