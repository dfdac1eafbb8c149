-- Policy simulations (what-if): each run of a steering policy version over stored history, with
-- its totals, so a publish can require a recent one and its change record can link it.

-- +goose Up
CREATE TABLE sdwan_simulations (
    id         TEXT PRIMARY KEY,
    policy_id  TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    body       TEXT NOT NULL, -- the Simulation as JSON: window, resolution, summary
    created_at BIGINT NOT NULL
);
CREATE INDEX sdwan_simulations_version ON sdwan_simulations (policy_id, version, created_at);
ALTER TABLE policies ADD COLUMN require_simulation_minutes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE changes ADD COLUMN simulation_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE changes DROP COLUMN simulation_id;
ALTER TABLE policies DROP COLUMN require_simulation_minutes;
DROP TABLE sdwan_simulations;
