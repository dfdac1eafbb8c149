-- The SIEM streams' cursors (the last audit record each sink accepted), for the scaled-out
-- mode: the stream runs on one controller at a time (the singleton job lease) and moves when it
-- dies, so its position must be shared. The embedded default keeps its cursor file.

-- +goose Up
CREATE TABLE siem_cursors (
    sink       TEXT PRIMARY KEY,
    seq        BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE siem_cursors;
