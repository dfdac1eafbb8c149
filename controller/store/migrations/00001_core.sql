-- The core schema. Portable SQL for SQLite and PostgreSQL: TEXT ids, BIGINT Unix-microsecond
-- times (0 = unset), JSON kept as TEXT. Every listable table has updated_at and an
-- (updated_at, id) index for keyset pagination.

-- +goose Up
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE org (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    hash         TEXT NOT NULL,
    scopes       TEXT NOT NULL,
    project      TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL DEFAULT 0,
    revoked_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_updated ON api_keys (updated_at, id);

CREATE TABLE devices (
    id         TEXT PRIMARY KEY,
    site_id    TEXT NOT NULL,
    name       TEXT NOT NULL,
    serial     TEXT NOT NULL DEFAULT '',
    status     TEXT NOT NULL,
    version    TEXT NOT NULL DEFAULT '',
    last_seen  BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX devices_updated ON devices (updated_at, id);
CREATE INDEX devices_site ON devices (site_id);

CREATE TABLE cases (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL,
    description TEXT NOT NULL,
    severity    TEXT NOT NULL,
    status      TEXT NOT NULL,
    source      TEXT NOT NULL,
    rule        TEXT NOT NULL DEFAULT '',
    subject     TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    resolved_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX cases_updated ON cases (updated_at, id);
CREATE INDEX cases_rule_subject ON cases (rule, subject, status);

CREATE TABLE case_notes (
    id         TEXT PRIMARY KEY,
    case_id    TEXT NOT NULL REFERENCES cases (id) ON DELETE CASCADE,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX case_notes_case ON case_notes (case_id, created_at);

CREATE TABLE webhooks (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,
    secret      TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX webhooks_updated ON webhooks (updated_at, id);

CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX events_created ON events (created_at);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL REFERENCES events (id),
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_attempt_at BIGINT NOT NULL DEFAULT 0,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX deliveries_webhook ON webhook_deliveries (webhook_id, updated_at, id);
CREATE INDEX deliveries_event ON webhook_deliveries (event_id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE events;
DROP TABLE webhooks;
DROP TABLE case_notes;
DROP TABLE cases;
DROP TABLE devices;
DROP TABLE api_keys;
DROP TABLE org;
DROP TABLE settings;
