-- The catalogue beside each pet: its profile (the document as the API returns it, plus the columns search
-- filters on), its photos (bytes in the database, so a backup is one thing) and the words search matches.
CREATE TABLE pet_profiles (
  pet_id bigint PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
  doc text NOT NULL,
  version bigint NOT NULL,
  updated_at bigint NOT NULL,
  sex text,
  age_group text,
  size text,
  good_children boolean,
  good_dogs boolean,
  good_cats boolean,
  house_trained boolean,
  special_needs boolean,
  latitude double precision,
  longitude double precision,
  breed text,
  description text
);
CREATE INDEX pet_profiles_location ON pet_profiles (latitude, longitude) WHERE latitude IS NOT NULL;

CREATE TABLE pet_photos (
  id text PRIMARY KEY,
  pet_id bigint NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  position integer NOT NULL,
  width integer NOT NULL,
  height integer NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX pet_photos_pet ON pet_photos (pet_id, position);
CREATE TABLE pet_photo_files (
  photo_id text NOT NULL REFERENCES pet_photos(id) ON DELETE CASCADE,
  size text NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (photo_id, size)
);

-- Lower case without accents, for words: the same folding when a pet's words are indexed and when a query is.
CREATE FUNCTION catalogue_fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT lower(translate(t, 'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿŒœßĀāĂăĄąĆćČčĎďĒēĘęĚěĞğĪīİıŁłŃńŇňŌōŐőŘřŚśŞşŠšŢţŤťŪūŮůŰűŹźŻżŽž', 'AAAAAAaaaaaaCcEEEEeeeeIIIIiiiiNnOOOOOOooooooUUUUuuuuYyyOosAaAaAaCcCcDdEeEeEeGgIiIiLlNnNnOoOoRrSsSsSsTtTtUuUuUuZzZzZz')) $$;

-- The words of a pet's name, breed and description, kept by triggers on both tables.
CREATE TABLE listing_words (
  pet_id bigint PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
  words tsvector NOT NULL
);
CREATE INDEX listing_words_words ON listing_words USING gin (words);
INSERT INTO listing_words (pet_id, words) SELECT id, to_tsvector('simple', catalogue_fold(name)) FROM pets;

-- Statement-level triggers with transition tables: a bulk insert (seeding, a turn's creations) indexes its
-- rows in one statement instead of one per row. A rename is rare and stays per row. SET search_path FROM
-- CURRENT, as for bump_read_version (010): a write from a session with another search_path finds the words.
CREATE FUNCTION listing_words_pets_added() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO listing_words (pet_id, words)
  SELECT id, to_tsvector('simple', catalogue_fold(name)) FROM added
  ON CONFLICT (pet_id) DO UPDATE SET words = excluded.words;
  RETURN NULL;
END $$;
CREATE FUNCTION listing_words_pet_renamed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO listing_words (pet_id, words)
  SELECT NEW.id, to_tsvector('simple', catalogue_fold(
    NEW.name || ' ' || coalesce(pr.breed, '') || ' ' || coalesce(pr.description, '')))
  FROM (SELECT 1) one LEFT JOIN pet_profiles pr ON pr.pet_id = NEW.id
  ON CONFLICT (pet_id) DO UPDATE SET words = excluded.words;
  RETURN NULL;
END $$;
CREATE FUNCTION listing_words_profiles_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO listing_words (pet_id, words)
  SELECT p.id, to_tsvector('simple', catalogue_fold(
    p.name || ' ' || coalesce(c.breed, '') || ' ' || coalesce(c.description, '')))
  FROM changed c JOIN pets p ON p.id = c.pet_id
  ON CONFLICT (pet_id) DO UPDATE SET words = excluded.words;
  RETURN NULL;
END $$;
CREATE TRIGGER listing_words_pets_added AFTER INSERT ON pets
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION listing_words_pets_added();
CREATE TRIGGER listing_words_pet_renamed AFTER UPDATE OF name ON pets
  FOR EACH ROW EXECUTE FUNCTION listing_words_pet_renamed();
CREATE TRIGGER listing_words_profiles_added AFTER INSERT ON pet_profiles
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION listing_words_profiles_changed();
CREATE TRIGGER listing_words_profiles_updated AFTER UPDATE ON pet_profiles
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION listing_words_profiles_changed();
