-- The per-site persisted-sequence watermark (docs/telemetry.md, "Nothing acknowledged is lost"):
-- the highest report sequence of the site's agent whose figures and time series are stored.
-- The controller tells the agent, which deletes spooled reports only once covered, and drops
-- reports at or below it as duplicates, across restarts.

-- +goose Up
ALTER TABLE sites ADD COLUMN stored_seq BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE sites DROP COLUMN stored_seq;
