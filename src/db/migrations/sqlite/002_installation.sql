-- One row, inserted by the migration runner with an id made in JavaScript (see INSTALLATION_MIGRATION).
CREATE TABLE installation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  installation_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
