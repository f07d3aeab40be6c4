-- One row, inserted by the migration runner with an id made in JavaScript (see INSTALLATION_MIGRATION).
CREATE TABLE installation (
  id integer PRIMARY KEY CHECK (id = 1),
  installation_id text NOT NULL,
  created_at bigint NOT NULL
);
