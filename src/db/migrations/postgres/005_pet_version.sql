-- The version of a pet, incremented by every change (PATCH, order transitions); its strong ETag is "<version>".
ALTER TABLE pets ADD COLUMN version bigint NOT NULL DEFAULT 1;
