-- The catalogue beside each pet: its profile (the document as the API returns it, plus the columns search
-- filters on), its photos (bytes in the database, so a backup is one thing) and the word index of search.
CREATE TABLE pet_profiles (
  pet_id INTEGER PRIMARY KEY REFERENCES pets(id) ON DELETE CASCADE,
  doc TEXT NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  sex TEXT,
  age_group TEXT,
  size TEXT,
  good_children INTEGER,
  good_dogs INTEGER,
  good_cats INTEGER,
  house_trained INTEGER,
  special_needs INTEGER,
  breed TEXT,
  description TEXT,
  latitude REAL,
  longitude REAL
);
CREATE INDEX pet_profiles_location ON pet_profiles (latitude, longitude) WHERE latitude IS NOT NULL;

CREATE TABLE pet_photos (
  id TEXT PRIMARY KEY,
  pet_id INTEGER NOT NULL REFERENCES pets(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX pet_photos_pet ON pet_photos (pet_id, position);
CREATE TABLE pet_photo_files (
  photo_id TEXT NOT NULL REFERENCES pet_photos(id) ON DELETE CASCADE,
  size TEXT NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (photo_id, size)
) WITHOUT ROWID;

-- Words of a pet's name, breed and description, case- and accent-insensitive; rowid is the pet's id.
CREATE VIRTUAL TABLE listing_words USING fts5 (
  name, breed, description, tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO listing_words (rowid, name, breed, description) SELECT id, name, '', '' FROM pets;
CREATE TRIGGER listing_words_pet_insert AFTER INSERT ON pets BEGIN
  INSERT INTO listing_words (rowid, name, breed, description) VALUES (new.id, new.name, '', '');
END;
CREATE TRIGGER listing_words_pet_rename AFTER UPDATE OF name ON pets BEGIN
  UPDATE listing_words SET name = new.name WHERE rowid = new.id;
END;
CREATE TRIGGER listing_words_pet_delete AFTER DELETE ON pets BEGIN
  DELETE FROM listing_words WHERE rowid = old.id;
END;
CREATE TRIGGER listing_words_profile_insert AFTER INSERT ON pet_profiles BEGIN
  UPDATE listing_words SET breed = coalesce(new.breed, ''), description = coalesce(new.description, '')
    WHERE rowid = new.pet_id;
END;
CREATE TRIGGER listing_words_profile_update AFTER UPDATE ON pet_profiles BEGIN
  UPDATE listing_words SET breed = coalesce(new.breed, ''), description = coalesce(new.description, '')
    WHERE rowid = new.pet_id;
END;
