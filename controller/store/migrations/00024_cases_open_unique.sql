-- At most one unresolved system case per rule and subject, across every controller sharing the
-- database: Raise inserts with ON CONFLICT DO NOTHING against this index and notes the case
-- that won instead (coreapi/soc). Before it, two controllers raising at once opened two.
-- Duplicates already there are folded into the newest: the older ones are resolved.

-- +goose Up
UPDATE cases SET status = 'resolved', resolved_at = updated_at
WHERE rule <> '' AND status <> 'resolved' AND EXISTS (
    SELECT 1 FROM cases n
    WHERE n.rule = cases.rule AND n.subject = cases.subject AND n.status <> 'resolved'
      AND (n.created_at > cases.created_at OR (n.created_at = cases.created_at AND n.id > cases.id)));
CREATE UNIQUE INDEX cases_open_system ON cases (rule, subject) WHERE rule <> '' AND status <> 'resolved';

-- +goose Down
DROP INDEX cases_open_system;
