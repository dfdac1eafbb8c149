-- Per-device NATS credentials of the scaled-out mode (docs/scale-out.md): the public key of
-- the NATS user a device's JWT was issued to, so that revoking the credential (site deleted)
-- can revoke that user in the account JWT. Empty for credentials of the embedded broker or
-- Mosquitto.

-- +goose Up
ALTER TABLE mqtt_credentials ADD COLUMN nats_user TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE mqtt_credentials DROP COLUMN nats_user;
