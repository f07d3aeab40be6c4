/**
 * How search compares words: the one folding of text applied when a pet's words are indexed and when a
 * query's are read, so `ｒｅｘ`, `REX` and `Rèx` all find "Rex".
 *
 * 1. NFKD: compatibility forms become their plain twins (fullwidth `ｒｅｘ` → `rex`, `ﬁ` → `fi`, `①` → `1`) and
 *    accented letters are decomposed;
 * 2. the combining diacritical marks (the five blocks below) are removed: `é` → `e`.
 * 3. Lower case, with final sigma read as sigma; a few Latin letters without a decomposition become the
 *    letters a reader types for them (`ø` → `o`, `ß` → `ss`, …).
 * 4. NFC, so scripts whose syllables decompose (Hangul) are written as they were.
 *
 * SQLite computes it with this very function (registered on every connection as `catalogue_fold`, which
 * the word index's triggers call). PostgreSQL cannot run it, so its `catalogue_fold` (migration 021) is the
 * same steps in SQL: `normalize`, the same mark ranges, `lower` under the ICU root collation when the server
 * has ICU, the same letter table. test/listings.fold.test.ts checks the two agree.
 */

/** The combining diacritical mark blocks: U+0300–036F, 1AB0–1AFF, 1DC0–1DFF, 20D0–20FF, FE20–FE2F. */
// The class lists whole blocks of combining marks on purpose: each is removed on its own.
// eslint-disable-next-line no-misleading-character-class
const MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;

/** Lower-case Latin letters with no canonical decomposition, and what they fold to. */
export const LETTERS: Readonly<Record<string, string>> = {
  ς: 'σ',
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ħ: 'h',
  ı: 'i',
};
const LETTER = new RegExp(`[${Object.keys(LETTERS).join('')}]`, 'g');

const NON_ASCII = /[^ -~\t\n\r]/;

/** The folded form of `text` (see the module's comment); idempotent. */
export function foldText(text: string): string {
  // Printable ASCII has nothing to decompose or compose: most names and many descriptions take this path.
  if (!NON_ASCII.test(text)) return text.toLowerCase();
  return text
    .normalize('NFKD')
    .replace(MARKS, '')
    .toLowerCase()
    .replace(LETTER, (letter) => LETTERS[letter]!)
    .normalize('NFC');
}
