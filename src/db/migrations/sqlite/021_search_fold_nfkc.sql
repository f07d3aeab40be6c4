-- Search folds compatibility forms (NFKC: fullwidth `ｒｅｘ` finds "Rex"), accents and case the same way when
-- a pet's words are indexed and when a query is read: catalogue_fold is src/db/fold.ts, registered on every
-- connection. The index holds the folded words (the tokenizer's own folding then changes nothing), so every
-- existing row is indexed again.
DROP TRIGGER listing_words_pet_insert;
DROP TRIGGER listing_words_pet_rename;
DROP TRIGGER listing_words_profile_insert;
DROP TRIGGER listing_words_profile_update;
CREATE TRIGGER listing_words_pet_insert AFTER INSERT ON pets BEGIN
  INSERT INTO listing_words (rowid, name, breed, description) VALUES (new.id, catalogue_fold(new.name), '', '');
END;
CREATE TRIGGER listing_words_pet_rename AFTER UPDATE OF name ON pets WHEN old.name IS NOT new.name BEGIN
  UPDATE listing_words SET name = catalogue_fold(new.name) WHERE rowid = new.id;
END;
CREATE TRIGGER listing_words_profile_insert AFTER INSERT ON pet_profiles BEGIN
  UPDATE listing_words
    SET breed = catalogue_fold(coalesce(new.breed, '')), description = catalogue_fold(coalesce(new.description, ''))
    WHERE rowid = new.pet_id;
END;
CREATE TRIGGER listing_words_profile_update AFTER UPDATE ON pet_profiles BEGIN
  UPDATE listing_words
    SET breed = catalogue_fold(coalesce(new.breed, '')), description = catalogue_fold(coalesce(new.description, ''))
    WHERE rowid = new.pet_id;
END;
DELETE FROM listing_words;
INSERT INTO listing_words (rowid, name, breed, description)
  SELECT p.id, catalogue_fold(p.name), catalogue_fold(coalesce(pr.breed, '')),
    catalogue_fold(coalesce(pr.description, ''))
  FROM pets p LEFT JOIN pet_profiles pr ON pr.pet_id = p.id;
