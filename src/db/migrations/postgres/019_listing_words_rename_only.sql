-- A pet's words are indexed again only when its name really changes (as on SQLite): most updates that name
-- the column (a merge patch repeating the name) leave it as it was, and re-indexing costs a tsvector of the
-- name, breed and description.
DROP TRIGGER listing_words_pet_renamed ON pets;
CREATE TRIGGER listing_words_pet_renamed AFTER UPDATE OF name ON pets
  FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION listing_words_pet_renamed();
