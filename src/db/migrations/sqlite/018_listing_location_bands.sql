-- The location index of the search by distance (src/modules/listings/cover.ts): a profile's latitude band
-- (a hundredth of a degree, computed exactly as the search computes it) and its longitude, so the pets at a
-- given distance from a point (a ring) are read as a few longitude ranges per band, not as a whole box.
-- The latitude makes it covering for the distance itself.
CREATE INDEX pet_profiles_band ON pet_profiles (CAST((latitude + 90) * 100 AS INTEGER), longitude, latitude);
