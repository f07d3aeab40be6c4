-- A pet's words are indexed again only when its name really changes. Re-indexing re-tokenizes the name, breed
-- and description (about 50 µs a row), and most updates that name the column (a merge patch repeating the
-- name, a status change sent with the whole pet) leave it as it was.
DROP TRIGGER listing_words_pet_rename;
CREATE TRIGGER listing_words_pet_rename AFTER UPDATE OF name ON pets WHEN old.name IS NOT new.name BEGIN
  UPDATE listing_words SET name = new.name WHERE rowid = new.id;
END;
