-- The AI gateway: projects, their policies with versions, and the audit log. Change records go
-- to the shared changes table (kind ai_policy.published).

-- +goose Up
CREATE TABLE aigw_projects (
    id              TEXT PRIMARY KEY,
    store_raw_input INTEGER NOT NULL DEFAULT 0,
    hash_key        TEXT NOT NULL,
    policy_id       TEXT NOT NULL DEFAULT '',
    policy_version  INTEGER NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE TABLE aigw_policies (
    id                TEXT PRIMARY KEY,
    project           TEXT NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    published_version INTEGER NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE UNIQUE INDEX aigw_policies_name ON aigw_policies (project, name);
CREATE INDEX aigw_policies_updated ON aigw_policies (updated_at, id);

CREATE TABLE aigw_policy_versions (
    policy_id    TEXT NOT NULL REFERENCES aigw_policies (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    status       TEXT NOT NULL,
    content      TEXT NOT NULL,
    comment      TEXT NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    published_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (policy_id, version)
);

-- One row per gateway request. entity_types is ",email,ssn," for LIKE filtering; seq orders
-- the SIEM streams (at-least-once cursors over it).
CREATE TABLE aigw_audit (
    id             TEXT PRIMARY KEY,
    seq            BIGINT NOT NULL,
    project        TEXT NOT NULL,
    key_id         TEXT NOT NULL,
    kind           TEXT NOT NULL,
    model          TEXT NOT NULL DEFAULT '',
    input          TEXT NOT NULL,
    raw_input      TEXT NOT NULL DEFAULT '',
    output         TEXT NOT NULL DEFAULT '',
    redactions     TEXT NOT NULL DEFAULT '[]',
    entity_types   TEXT NOT NULL DEFAULT ',',
    findings       TEXT NOT NULL DEFAULT '[]',
    policy_id      TEXT NOT NULL DEFAULT '',
    policy_version INTEGER NOT NULL DEFAULT 0,
    blocked        INTEGER NOT NULL DEFAULT 0,
    status         INTEGER NOT NULL,
    latency_us     BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE UNIQUE INDEX aigw_audit_seq ON aigw_audit (seq);
CREATE INDEX aigw_audit_project ON aigw_audit (project, updated_at, id);
CREATE INDEX aigw_audit_updated ON aigw_audit (updated_at, id);

-- +goose Down
DROP TABLE aigw_audit;
DROP TABLE aigw_policy_versions;
DROP TABLE aigw_policies;
DROP TABLE aigw_projects;
