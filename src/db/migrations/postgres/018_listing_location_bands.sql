-- The location index of the search by distance (src/modules/listings/cover.ts): a profile's latitude band
-- (a hundredth of a degree, computed exactly as the search computes it) and its longitude, so the pets at a
-- given distance from a point (a ring) are read as a few longitude ranges per band, not as a whole box.
CREATE INDEX pet_profiles_band ON pet_profiles ((floor((latitude + 90) * 100)::integer), longitude)
  WHERE latitude IS NOT NULL;

-- Search pages are answered from the exact page cache (src/http/page-cache.ts) like the pets' lists: a
-- listing carries its profile and its primary photo, so writing either moves the version too.
CREATE TRIGGER pet_profiles_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pet_profiles
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
CREATE TRIGGER pet_photos_bump_read_version
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pet_photos
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_version();
