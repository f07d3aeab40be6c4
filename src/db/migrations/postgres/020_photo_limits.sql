-- Photos a read can serialize, and originals without metadata.
-- 1. Uploads used to be checked against 50 megapixels alone, so a photo could claim a side past 16,384 pixels
--    (the read schema's bound, WebP's own limit): one such row turned every page that held it into a 500. Such
--    photos (and their files, by cascade) are deleted, since their renderings of a 1-pixel strip show nothing,
--    and the remaining photos of each pet close ranks so positions stay 0..n-1.
-- 2. Originals were stored as uploaded, EXIF (GPS, camera) included; they are never served and SQL cannot
--    re-encode them, so they are dropped. The renderings were always clean and stay; new originals are stored
--    re-encoded without metadata. The dead tuples and TOAST chunks are reclaimed by VACUUM (docs/operations.md).
DELETE FROM pet_photos
WHERE width NOT BETWEEN 1 AND 16384 OR height NOT BETWEEN 1 AND 16384 OR width::bigint * height > 50000000;
UPDATE pet_photos p SET position = ranked.position
FROM (SELECT id, (row_number() OVER (PARTITION BY pet_id ORDER BY position) - 1)::int AS position FROM pet_photos) ranked
WHERE p.id = ranked.id AND p.position <> ranked.position;
DELETE FROM pet_photo_files WHERE size = 'original';
