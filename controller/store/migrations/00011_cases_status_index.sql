-- Case lists filtered by status (the SOC queue: ?status=open, ?status=investigating) walk
-- cases_updated and discard every row of another status; with few matching rows among many
-- that is thousands of rows read per page. Keyed on (status, updated_at, id), the status filter
-- becomes an index range already in keyset order, so a page reads about one page of rows
-- (further filters on severity or source are checked within that status only).
-- Measured with scripts/bench-list.sh (100k cases): see docs/benchmarks.md.

-- +goose Up
CREATE INDEX cases_status_updated ON cases (status, updated_at, id);

-- +goose Down
DROP INDEX cases_status_updated;
