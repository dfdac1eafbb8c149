-- The SD-WAN family: sites, transports, the agents' MQTT credentials, policies with versions,
-- change records and per-site rollouts. Portable SQL as in 00001.

-- +goose Up
CREATE TABLE sites (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    status           TEXT NOT NULL,
    role             TEXT NOT NULL,
    location         TEXT NOT NULL DEFAULT '{}',
    segments         TEXT NOT NULL DEFAULT '[]',
    serial           TEXT NOT NULL DEFAULT '',
    claim_hash       TEXT NOT NULL DEFAULT '',
    claim_expires_at BIGINT NOT NULL DEFAULT 0,
    claimed_at       BIGINT NOT NULL DEFAULT 0,
    device_id        TEXT NOT NULL DEFAULT '',
    last_seen        BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX sites_updated ON sites (updated_at, id);
CREATE UNIQUE INDEX sites_name ON sites (name);
CREATE INDEX sites_claim ON sites (claim_hash);

CREATE TABLE transports (
    id             TEXT PRIMARY KEY,
    site_id        TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    kind           TEXT NOT NULL,
    interface      TEXT NOT NULL DEFAULT '',
    gateway        TEXT NOT NULL DEFAULT '',
    probe_targets  TEXT NOT NULL DEFAULT '[]',
    bandwidth_kbps BIGINT NOT NULL DEFAULT 0,
    cost           INTEGER NOT NULL DEFAULT 0,
    status         TEXT NOT NULL,
    latency_ms     DOUBLE PRECISION NOT NULL DEFAULT 0,
    loss_pct       DOUBLE PRECISION NOT NULL DEFAULT 0,
    jitter_ms      DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_sample_at BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX transports_site_name ON transports (site_id, name);
CREATE INDEX transports_updated ON transports (updated_at, id);

CREATE TABLE mqtt_credentials (
    username       TEXT PRIMARY KEY,
    site_id        TEXT NOT NULL,
    hash           TEXT NOT NULL, -- Mosquitto's $7$ PBKDF2-SHA512 format, used by both brokers
    created_at     BIGINT NOT NULL,
    revoked_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX mqtt_credentials_site ON mqtt_credentials (site_id);

CREATE TABLE policies (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    type              TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    published_version INTEGER NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX policies_updated ON policies (updated_at, id);
CREATE UNIQUE INDEX policies_name ON policies (name);

CREATE TABLE policy_versions (
    policy_id    TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    status       TEXT NOT NULL,
    content      TEXT NOT NULL,
    comment      TEXT NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    published_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (policy_id, version)
);

-- Which version of which policy each site runs, one policy of each type per site.
CREATE TABLE site_policies (
    site_id    TEXT NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    policy_id  TEXT NOT NULL,
    version    INTEGER NOT NULL,
    state      TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    change_id  TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (site_id, type)
);
CREATE INDEX site_policies_policy ON site_policies (policy_id, version);

CREATE TABLE changes (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    actor        TEXT NOT NULL,
    target       TEXT NOT NULL,
    version      INTEGER NOT NULL DEFAULT 0,
    from_version INTEGER NOT NULL DEFAULT 0,
    sites        TEXT NOT NULL DEFAULT '[]',
    diff         TEXT NOT NULL DEFAULT '',
    comment      TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX changes_updated ON changes (updated_at, id);

-- +goose Down
DROP TABLE changes;
DROP TABLE site_policies;
DROP TABLE policy_versions;
DROP TABLE policies;
DROP TABLE mqtt_credentials;
DROP TABLE transports;
DROP TABLE sites;
