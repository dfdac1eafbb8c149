-- The AI gateway's document captures and Automatic mode's policy proposals.

-- +goose Up
-- One row per uploaded document. body is the document as the API shows it (JSON, already
-- redacted); blob the raw upload sealed with the audit key while it waits for the worker
-- (emptied once processed). work is what the worker still has to do: extract, deliver (to a
-- CRM URL) or nothing; claimed_until leases it to one worker.
CREATE TABLE aigw_documents (
    id            TEXT PRIMARY KEY,
    project       TEXT NOT NULL,
    status        TEXT NOT NULL,
    work          TEXT NOT NULL DEFAULT '',
    claimed_until BIGINT NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    body          TEXT NOT NULL,
    blob          TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX aigw_documents_project ON aigw_documents (project, updated_at, id);
CREATE INDEX aigw_documents_updated ON aigw_documents (updated_at, id);
CREATE INDEX aigw_documents_work ON aigw_documents (work, claimed_until);

-- Automatic mode's proposals. fingerprint identifies the change (kind and target): a change
-- proposed once, whatever became of it, is not proposed again.
CREATE TABLE aigw_proposals (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX aigw_proposals_fingerprint ON aigw_proposals (project, fingerprint);
CREATE INDEX aigw_proposals_project ON aigw_proposals (project, updated_at, id);
CREATE INDEX aigw_proposals_updated ON aigw_proposals (updated_at, id);

-- +goose Down
DROP TABLE aigw_proposals;
DROP TABLE aigw_documents;
