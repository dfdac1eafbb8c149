package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
	q "github.com/edgewan/edgewan/coreapi/quarantine"
	"github.com/edgewan/edgewan/coreapi/seal"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

var (
	_ webhook.Store      = (*Store)(nil)
	_ webhook.QueueStore = (*Store)(nil)
)

const webhookCols = "id, url, events, secret, description, created_by, created_at, updated_at"

func scanWebhook(sc interface{ Scan(...any) error }) (*webhook.Webhook, error) {
	var w webhook.Webhook
	var evs string
	var c, u int64
	if err := sc.Scan(&w.ID, &w.URL, &evs, &w.Secret, &w.Description, &w.CreatedBy, &c, &u); err != nil {
		return nil, err
	}
	w.Events = strings.Split(evs, ",")
	w.CreatedAt, w.UpdatedAt = fromMicros(c), fromMicros(u)
	return &w, nil
}

// sealSecret is a webhook's signing secret as stored: sealed with Options.Secrets, bound to
// the webhook's ID.
func (s *Store) sealSecret(id, secret string) string {
	if s.secrets == nil {
		return secret
	}
	return s.secrets.Seal(id, []byte(secret))
}

// openSecret is the signing secret of a stored value (plain text when the store seals nothing).
func (s *Store) openSecret(id, stored string) (string, error) {
	if s.secrets == nil {
		if seal.IsSealed(stored) {
			return "", fmt.Errorf("webhook %s: the secret is sealed and the store has no key", id)
		}
		return stored, nil
	}
	b, err := s.secrets.Open(id, stored)
	if err != nil {
		return "", fmt.Errorf("webhook %s: %w", id, err)
	}
	return string(b), nil
}

// sealWebhookSecrets seals the secrets stored in plain text (before sealing existed) and
// reseals those that only previous opens (after a key rotation), in one transaction.
func (s *Store) sealWebhookSecrets(ctx context.Context, previous *seal.Key) error {
	type row struct{ id, secret string }
	var change []row
	var bad []string
	opened := 0
	err := s.queryRows(ctx, "SELECT id, secret FROM webhooks", nil, func(r *sql.Rows) error {
		var x row
		if err := r.Scan(&x.id, &x.secret); err != nil {
			return err
		}
		switch {
		case !seal.IsSealed(x.secret):
			change = append(change, row{x.id, s.secrets.Seal(x.id, []byte(x.secret))})
		default:
			if _, err := s.secrets.Open(x.id, x.secret); err == nil {
				opened++
				return nil
			}
			var plain []byte
			err := errors.New("no previous key was given")
			if previous != nil {
				plain, err = previous.Open(x.id, x.secret)
			}
			if err != nil {
				// Nothing in the data stops the start: the webhook is quarantined (its API
				// representation, a metric and a SOC case say so) and every other one delivers.
				bad = append(bad, x.id)
				return nil
			}
			opened++
			change = append(change, row{x.id, s.secrets.Seal(x.id, plain)})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store.sealWebhookSecrets: %w", err)
	}
	if len(bad) > 0 {
		hint := ""
		if opened == 0 {
			hint = " (none opens: is this the right secrets key? docs/security.md)"
		}
		slog.Error("store: webhook secrets open with neither the secrets key nor the previous one; those webhooks are quarantined"+hint,
			"webhooks", bad)
	}
	if len(change) == 0 {
		return nil
	}
	if !s.postgres {
		// The old values must not linger in freed page space or the WAL: zero what the
		// updates free, then write everything back to the database and empty the WAL. (On
		// PostgreSQL, autovacuum reclaims the old row versions; docs/security.md.)
		if _, err := s.w.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
			return fmt.Errorf("store.sealWebhookSecrets: %w", err)
		}
		defer s.w.ExecContext(ctx, "PRAGMA secure_delete = OFF") //nolint:errcheck // only a cost
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for _, x := range change {
			if _, err := tx.ExecContext(ctx, s.q("UPDATE webhooks SET secret = ? WHERE id = ?"), x.secret, x.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && !s.postgres {
		_, err = s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if err != nil {
		return fmt.Errorf("store.sealWebhookSecrets: %w", err)
	}
	return nil
}

// CreateWebhook stores a webhook registration, its secret sealed.
func (s *Store) CreateWebhook(ctx context.Context, w *webhook.Webhook) error {
	_, err := s.exec(ctx, "INSERT INTO webhooks ("+webhookCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		w.ID, w.URL, strings.Join(w.Events, ","), s.sealSecret(w.ID, w.Secret), w.Description, w.CreatedBy, micros(w.CreatedAt), micros(w.UpdatedAt))
	if err != nil {
		return fmt.Errorf("store.CreateWebhook: %w", err)
	}
	return nil
}

// GetWebhook returns a webhook with its secret; a stored registration that cannot be used
// comes back quarantined, without its secret, rather than as an error.
func (s *Store) GetWebhook(ctx context.Context, id string) (*webhook.Webhook, error) {
	w, err := scanWebhook(s.r.QueryRowContext(ctx, s.q("SELECT "+webhookCols+" FROM webhooks WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("webhook", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetWebhook: %w", err)
	}
	s.checkWebhook(w)
	return w, nil
}

// checkWebhook opens w's stored secret into w.Secret, and quarantines w if it does not open
// or its URL is not one the dispatcher can call.
func (s *Store) checkWebhook(w *webhook.Webhook) {
	secret, err := s.openSecret(w.ID, w.Secret)
	w.Secret = secret
	if err != nil {
		w.Quarantine = q.New(q.Secret, "the signing secret does not open with the secrets key: "+err.Error())
		return
	}
	if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		w.Quarantine = q.New(q.Data, fmt.Sprintf("the stored URL %q is not an http(s) URL", w.URL))
	}
}

// subscribed matches a comma-joined events column against one event type on both backends.
const subscribed = "(',' || events || ',') LIKE ?"

func subscribedArg(typ string) string { return "%," + typ + ",%" }

// ListWebhooks lists webhooks, optionally only those subscribed to eventType, without their
// secrets; those that cannot be used are quarantined.
func (s *Store) ListWebhooks(ctx context.Context, p page.Params, eventType string) ([]*webhook.Webhook, error) {
	l := listQuery{cols: webhookCols, from: "webhooks", params: p}
	if eventType != "" {
		l.where = append(l.where, subscribed)
		l.args = append(l.args, subscribedArg(eventType))
	}
	query, args := l.sql()
	var out []*webhook.Webhook
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		w, err := scanWebhook(r)
		if err != nil {
			return err
		}
		s.checkWebhook(w)
		w.Secret = "" // lists never show it
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListWebhooks: %w", err)
	}
	return out, nil
}

// QuarantinedWebhooks returns every stored webhook that cannot be used, without secrets.
func (s *Store) QuarantinedWebhooks(ctx context.Context) ([]*webhook.Webhook, error) {
	var out []*webhook.Webhook
	err := s.queryRows(ctx, "SELECT "+webhookCols+" FROM webhooks ORDER BY id", nil, func(r *sql.Rows) error {
		w, err := scanWebhook(r)
		if err != nil {
			return err
		}
		if s.checkWebhook(w); w.Quarantine != nil {
			w.Secret = ""
			out = append(out, w)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.QuarantinedWebhooks: %w", err)
	}
	return out, nil
}

// DeleteWebhook removes a webhook; its deliveries go with it.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM webhook_deliveries WHERE webhook_id = ?"), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q("DELETE FROM webhooks WHERE id = ?"), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("webhook", id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store.DeleteWebhook: %w", err)
	}
	return nil
}

// InsertEvent stores an event and queues its deliveries.
func (s *Store) InsertEvent(ctx context.Context, ev *event.Envelope) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = s.insertEvent(ctx, tx, ev)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store.InsertEvent: %w", err)
	}
	return n, nil
}

// insertEvents writes several events in tx and returns how many deliveries they queued.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, evs []*event.Envelope) (int, error) {
	n := 0
	for _, ev := range evs {
		k, err := s.insertEvent(ctx, tx, ev)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// insertEvent writes ev and a pending delivery per subscribed webhook inside tx. It is the one
// way events enter the database, so every state change that announces itself does it atomically.
func (s *Store) insertEvent(ctx context.Context, tx *sql.Tx, ev *event.Envelope) (int, error) {
	if ev == nil {
		return 0, nil
	}
	now := micros(ev.CreatedAt)
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO events (id, type, created_at, data) VALUES (?, ?, ?, ?)"),
		ev.ID, ev.Type, now, string(ev.Data)); err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, s.q("SELECT id FROM webhooks WHERE "+subscribed), subscribedArg(ev.Type))
	if err != nil {
		return 0, err
	}
	var hooks []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		hooks = append(hooks, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, h := range hooks {
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			ids.New("dlv"), h, ev.ID, webhook.StatusPending, now, now, now); err != nil {
			return 0, err
		}
	}
	return len(hooks), nil
}

const deliveryCols = "d.id, d.webhook_id, d.event_id, e.type, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at, d.updated_at"

func scanDelivery(sc interface{ Scan(...any) error }) (*webhook.Delivery, error) {
	var d webhook.Delivery
	var next, last, c, u int64
	if err := sc.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.Status, &d.Attempts, &next, &last, &d.LastStatus, &d.LastError, &c, &u); err != nil {
		return nil, err
	}
	if d.Status == webhook.StatusPending {
		d.NextAttemptAt = fromMicros(next)
	}
	d.LastAttemptAt, d.CreatedAt, d.UpdatedAt = fromMicros(last), fromMicros(c), fromMicros(u)
	return &d, nil
}

// ListDeliveries lists a webhook's deliveries, optionally by status and event.
func (s *Store) ListDeliveries(ctx context.Context, webhookID string, p page.Params, status, eventID string) ([]*webhook.Delivery, error) {
	l := listQuery{cols: deliveryCols, from: "webhook_deliveries d JOIN events e ON e.id = d.event_id", params: p, tablePrefix: "d."}
	l.filter("d.webhook_id", webhookID)
	l.filter("d.status", status)
	l.filter("d.event_id", eventID)
	query, args := l.sql()
	var out []*webhook.Delivery
	err := s.queryRows(ctx, query, args, func(r *sql.Rows) error {
		d, err := scanDelivery(r)
		out = append(out, d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store.ListDeliveries: %w", err)
	}
	return out, nil
}

// GetDelivery returns one delivery of a webhook.
func (s *Store) GetDelivery(ctx context.Context, webhookID, id string) (*webhook.Delivery, error) {
	d, err := scanDelivery(s.r.QueryRowContext(ctx, s.q("SELECT "+deliveryCols+" FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ? AND d.webhook_id = ?"), id, webhookID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("delivery", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetDelivery: %w", err)
	}
	return d, nil
}

// Redeliver queues a new delivery of an earlier delivery's event.
func (s *Store) Redeliver(ctx context.Context, webhookID, deliveryID string, now time.Time) (*webhook.Delivery, error) {
	old, err := s.GetDelivery(ctx, webhookID, deliveryID)
	if err != nil {
		return nil, err
	}
	id := ids.New("dlv")
	if _, err := s.exec(ctx, "INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		id, webhookID, old.EventID, webhook.StatusPending, micros(now), micros(now), micros(now)); err != nil {
		return nil, fmt.Errorf("store.Redeliver: %w", err)
	}
	return s.GetDelivery(ctx, webhookID, id)
}

// dueSQL selects due deliveries to claim: among the earliest due (up to LIMIT), at most a
// number per webhook. Ranking only the earliest rows, not every due one, keeps a claim's cost
// flat however long the backlog grows; a webhook is not starved by another's backlog because the
// dispatcher excludes a lane that has its share until it drains. Its parameters are the status,
// now, the excluded webhook IDs (excl holds their placeholders), the limit and the per-webhook cap.
func dueSQL(excl string) string {
	return `SELECT id, webhook_id, event_id, attempts, created_at, next_attempt_at FROM (
  SELECT id, webhook_id, event_id, attempts, created_at, next_attempt_at,
         ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS rn
  FROM (SELECT id, webhook_id, event_id, attempts, created_at, next_attempt_at FROM webhook_deliveries
        WHERE status = ? AND next_attempt_at <= ?` + excl + ` ORDER BY next_attempt_at LIMIT ?) earliest) ranked
WHERE rn <= ?`
}

const jobCols = "x.id, x.webhook_id, x.attempts, x.created_at, w.url, w.secret, e.id, e.type, e.created_at, e.data"

// ClaimDue implements webhook.QueueStore. The UPDATE re-checks the status, so two controllers
// sharing a PostgreSQL database never both claim a delivery. On PostgreSQL the claim is one
// statement, one round trip: claims run one after another, so their latency bounds throughput.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, perWebhook, limit int, exclude []string) ([]webhook.Job, error) {
	args := make([]any, 0, len(exclude)+7)
	args = append(args, webhook.StatusPending, micros(now))
	excl := ""
	if len(exclude) > 0 {
		excl = " AND webhook_id NOT IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(exclude)), ", ") + ")"
		for _, e := range exclude {
			args = append(args, e)
		}
	}
	args = append(args, limit, perWebhook)
	var jobs []webhook.Job
	var err error
	if s.postgres {
		args = append(args, webhook.StatusDelivering, micros(now), webhook.StatusPending)
		q := `WITH due AS (` + dueSQL(excl) + `),
x AS (UPDATE webhook_deliveries d SET status = ?, updated_at = ? FROM due WHERE d.id = due.id AND d.status = ?
      RETURNING d.id, d.webhook_id, d.event_id, d.attempts, d.created_at, d.next_attempt_at)
SELECT ` + jobCols + ` FROM x JOIN webhooks w ON w.id = x.webhook_id JOIN events e ON e.id = x.event_id
ORDER BY x.next_attempt_at, x.id`
		jobs, err = scanJobs(s.w.QueryContext(ctx, s.q(q), args...))
	} else {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			q := `SELECT ` + jobCols + ` FROM (` + dueSQL(excl) + `) x
JOIN webhooks w ON w.id = x.webhook_id JOIN events e ON e.id = x.event_id
ORDER BY x.next_attempt_at, x.id`
			var err error
			if jobs, err = scanJobs(tx.QueryContext(ctx, q, args...)); err != nil || len(jobs) == 0 {
				return err
			}
			// The transaction holds SQLite's write lock, so every row selected is still pending.
			// The unary + keeps SQLite from walking the (status, next_attempt_at) index, which
			// holds the whole backlog, instead of looking the IDs up.
			args = append(args[:0], webhook.StatusDelivering, micros(now), webhook.StatusPending)
			for _, j := range jobs {
				args = append(args, j.DeliveryID)
			}
			res, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET status = ?, updated_at = ? WHERE +status = ? AND id IN ("+
				strings.TrimSuffix(strings.Repeat("?, ", len(jobs)), ", ")+")", args...)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != int64(len(jobs)) {
				return fmt.Errorf("claimed %d of %d deliveries selected in the same transaction (%v)", n, len(jobs), err)
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("store.ClaimDue: %w", err)
	}
	for i := range jobs {
		// A secret that does not open (the key was replaced without the previous one) is
		// left empty: the dispatcher fails that attempt rather than send it badly signed.
		if jobs[i].Secret, err = s.openSecret(jobs[i].WebhookID, jobs[i].Secret); err != nil {
			slog.Error("webhook delivery: signing secret", "err", err)
			jobs[i].Secret = ""
		}
	}
	return jobs, nil
}

func scanJobs(rows *sql.Rows, err error) ([]webhook.Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []webhook.Job
	for rows.Next() {
		var j webhook.Job
		var created, evAt int64
		var data string
		if err := rows.Scan(&j.DeliveryID, &j.WebhookID, &j.Attempts, &created, &j.URL, &j.Secret, &j.Event.ID, &j.Event.Type, &evAt, &data); err != nil {
			return nil, err
		}
		j.CreatedAt, j.Event.CreatedAt, j.Event.Data = fromMicros(created), fromMicros(evAt), json.RawMessage(data)
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// FinishDeliveries stores attempt results in one transaction: on PostgreSQL in one statement
// (a round trip per row would bound delivery throughput), on SQLite, which has no round trips,
// with a prepared statement per row.
func (s *Store) FinishDeliveries(ctx context.Context, rs []webhook.Result) error {
	if len(rs) == 0 {
		return nil
	}
	var err error
	if s.postgres {
		err = s.finishPostgres(ctx, rs)
	} else {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			stmt, err := tx.PrepareContext(ctx, "UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ? WHERE id = ?")
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, r := range rs {
				if _, err := stmt.ExecContext(ctx, r.Status, r.Attempts, micros(r.NextAttemptAt), micros(r.AttemptedAt), r.HTTPStatus, r.Error, micros(r.AttemptedAt), r.DeliveryID); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("store.FinishDeliveries: %w", err)
	}
	return nil
}

func (s *Store) finishPostgres(ctx context.Context, rs []webhook.Result) error {
	ids, statuses, errs := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	attempts, codes := make([]int32, len(rs)), make([]int32, len(rs))
	next, last := make([]int64, len(rs)), make([]int64, len(rs))
	for i, r := range rs {
		ids[i], statuses[i], errs[i] = r.DeliveryID, r.Status, r.Error
		attempts[i], codes[i] = int32(r.Attempts), int32(r.HTTPStatus)
		next[i], last[i] = micros(r.NextAttemptAt), micros(r.AttemptedAt)
	}
	_, err := s.w.ExecContext(ctx, `UPDATE webhook_deliveries AS d
SET status = v.status, attempts = v.attempts, next_attempt_at = v.next, last_attempt_at = v.last,
    last_status = v.code, last_error = v.err, updated_at = v.last
FROM unnest($1::text[], $2::text[], $3::int4[], $4::int8[], $5::int8[], $6::int4[], $7::text[])
     AS v(id, status, attempts, next, last, code, err)
WHERE d.id = v.id`, ids, statuses, attempts, next, last, codes, errs)
	return err
}

// ResetInFlight implements webhook.QueueStore. A claim sets updated_at, and nothing else
// touches a delivering row until its result, so updated_at is the claim's time.
func (s *Store) ResetInFlight(ctx context.Context, now, claimedBefore time.Time) (int64, error) {
	res, err := s.exec(ctx, "UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, updated_at = ? WHERE status = ? AND updated_at < ?",
		webhook.StatusPending, micros(now), micros(now), webhook.StatusDelivering, micros(claimedBefore))
	if err != nil {
		return 0, fmt.Errorf("store.ResetInFlight: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// CountDeliveries implements webhook.QueueStore.
func (s *Store) CountDeliveries(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.queryRows(ctx, "SELECT status, COUNT(*) FROM webhook_deliveries GROUP BY status", nil, func(r *sql.Rows) error {
		var st string
		var n int64
		if err := r.Scan(&st, &n); err != nil {
			return err
		}
		out[st] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store.CountDeliveries: %w", err)
	}
	return out, nil
}
