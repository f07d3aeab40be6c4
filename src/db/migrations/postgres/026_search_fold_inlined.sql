-- catalogue_fold (021) as one expression: the same steps, without the FROM clause that named its middle
-- result. A SQL function with a FROM clause cannot be inlined, so PostgreSQL parsed and planned its query
-- again in every statement that called it: in the rename trigger (019), which runs per renamed row, that
-- was more than half of what a rename cost the database (EXPLAIN ANALYZE of a turn's 20 renames: 115-150
-- µs a row in the trigger, 50-60 µs inlined). Inlined, the fold is part of the calling statement's plan,
-- the search's included.
DO $migration$
DECLARE
  icu text := CASE WHEN EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')
    THEN ' COLLATE "und-x-icu"' ELSE '' END;
BEGIN
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION catalogue_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $body$
      SELECT normalize(replace(replace(replace(translate(lower(regexp_replace(normalize(t, NFKD),
        '[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]', '', 'g')%s),
        'ςøłđħı', 'σoldhi'), 'ß', 'ss'), 'æ', 'ae'), 'œ', 'oe'), NFC)
    $body$ $fn$, icu);
END $migration$;
