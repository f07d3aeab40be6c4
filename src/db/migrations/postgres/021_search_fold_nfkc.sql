-- Search folds compatibility forms (NFKC: fullwidth `ｒｅｘ` finds "Rex"), accents and case: catalogue_fold is
-- the steps of src/db/fold.ts in SQL (SQLite runs that function itself). normalize() needs a UTF8 database.
-- lower() follows the ICU root locale when the server has ICU (as JavaScript's toLowerCase does); without
-- it, the database's own ctype. The triggers already index catalogue_fold(...), so only the function and
-- the existing rows change.
DO $migration$
DECLARE
  lowered text := CASE WHEN EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')
    THEN 'lower(s COLLATE "und-x-icu")' ELSE 'lower(s)' END;
BEGIN
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION catalogue_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $body$
      SELECT normalize(
        replace(replace(replace(translate(%s, 'ςøłđħı', 'σoldhi'), 'ß', 'ss'), 'æ', 'ae'), 'œ', 'oe'), NFC)
      FROM (SELECT regexp_replace(normalize(t, NFKD),
        '[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]', '', 'g') AS s) folded
    $body$ $fn$, lowered);
END $migration$;

UPDATE listing_words w SET words = to_tsvector('simple', catalogue_fold(
    p.name || ' ' || coalesce(pr.breed, '') || ' ' || coalesce(pr.description, '')))
  FROM pets p LEFT JOIN pet_profiles pr ON pr.pet_id = p.id
  WHERE p.id = w.pet_id;
