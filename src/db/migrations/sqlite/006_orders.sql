-- Store orders (DESIGN 4.3). pet_id has no foreign key: a deleted pet's past orders keep their petId.
CREATE TABLE orders (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  pet_id INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('placed', 'approved', 'delivered', 'cancelled')),
  version INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX orders_account_id ON orders (account_id, id);
CREATE INDEX orders_status_id ON orders (status, id);
CREATE INDEX orders_pet_id ON orders (pet_id, id);
-- At most one open order per pet, whatever the race: the database refuses the second.
CREATE UNIQUE INDEX orders_one_open_per_pet ON orders (pet_id) WHERE status IN ('placed', 'approved');
