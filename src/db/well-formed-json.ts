/**
 * Repairs JSON text written by `JSON.stringify` from a string holding a lone surrogate: such a string is
 * written as an escape (`\ud800`), which strict JSON decoders refuse. `JSON.stringify` writes a
 * surrogate pair as the character itself, so every escape of a surrogate in its output is a lone one; each
 * becomes `\ufffd` (what a UTF-8 encoder writes). An escape is one whose backslash is not itself escaped:
 * preceded by an even number of backslashes. PostgreSQL runs the same expression (migration 022).
 */
const LONE_SURROGATE_ESCAPE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/gi;

export function wellFormedJsonText(text: string): string {
  return text.replace(LONE_SURROGATE_ESCAPE, '$1\\ufffd');
}
