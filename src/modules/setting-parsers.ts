/**
 * Parsers for the settings modules declare (ApiModule.settings), worded like src/config.ts's own. They throw a
 * plain Error with what is wrong; src/config.ts names the variable (ConfigError). Nothing here imports
 * config.ts, which reads the module list (a module importing it back would be a cycle).
 */

/** A whole number within min..max; unset: `fallback`. */
export function wholeNumber(fallback: number, min: number, max: number): (raw: string | undefined) => number {
  return (raw) => {
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw.trim())) throw new Error(`expected a whole number, got "${raw}"`);
    const value = Number(raw.trim());
    if (value < min || value > max) throw new Error(`expected ${min}..${max}, got ${value}`);
    return value;
  };
}
