-- A claim skips the webhooks whose lanes are full; without this index it steps past their whole
-- due backlog. Keyed on (webhook_id, status, next_attempt_at), the due deliveries of one webhook
-- are a range. (Measured with BenchmarkClaim, coreapi/webhook/dispatch_bench_test.go.)

-- +goose Up
CREATE INDEX deliveries_webhook_due ON webhook_deliveries (webhook_id, status, next_attempt_at);

-- +goose Down
DROP INDEX deliveries_webhook_due;
