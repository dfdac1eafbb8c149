package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/edgewan/edgewan/controller/store/storetest"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func TestKeys(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t)
			k, tok, err := auth.Create(ctx, s, "ops", []string{"soc:read", "org:read", "soc:read"}, "")
			if err != nil {
				t.Fatal(err)
			}
			id, secret, ok := auth.ParseToken(tok)
			if !ok || id != k.ID {
				t.Fatalf("ParseToken(%q) = %q, %v; want %q", tok, id, ok, k.ID)
			}
			got, hash, err := s.KeyByID(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !auth.SecretMatches(secret, hash) || hash == secret {
				t.Fatal("stored hash does not match the token's secret, or the secret is stored as is")
			}
			if fmt.Sprint(got.Scopes) != "[org:read soc:read]" || got.Name != "ops" {
				t.Fatalf("got %+v; want scopes [org:read soc:read] name ops", got)
			}
			if err := s.RevokeKey(ctx, k.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			got, _, _ = s.KeyByID(ctx, k.ID)
			if !got.Revoked() {
				t.Fatal("key not revoked")
			}
			if err := s.RevokeKey(ctx, "key_missing", time.Now()); !errors.Is(err, apierr.ErrNotFound) {
				t.Fatalf("revoking a missing key: got %v; want not found", err)
			}
			if _, _, err := s.KeyByID(ctx, "key_missing"); !errors.Is(err, apierr.ErrNotFound) {
				t.Fatalf("missing key: got %v; want not found", err)
			}
		})
	}
}

// TestClaimDue checks the queue's claiming rules: only due pending deliveries, at most
// perWebhook per webhook, excluded webhooks skipped, a claimed delivery never claimed twice,
// and deliveries left in flight returned to the queue by ResetInFlight.
func TestClaimDue(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t)
			now := time.Now().UTC()
			for _, id := range []string{"wh_a", "wh_b"} {
				if err := s.CreateWebhook(ctx, &webhook.Webhook{ID: id, URL: "https://example.test/" + id, Events: []string{event.CaseOpened},
					Secret: "s", CreatedAt: now, UpdatedAt: now}); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 5; i++ {
				ev, _ := event.New(event.CaseOpened, map[string]int{"i": i})
				n, err := s.InsertEvent(ctx, ev)
				if err != nil || n != 2 {
					t.Fatalf("InsertEvent: got %d, %v; want 2 deliveries", n, err)
				}
			}
			other, _ := event.New(event.CaseClosed, map[string]int{})
			if n, _ := s.InsertEvent(ctx, other); n != 0 {
				t.Fatalf("event nobody subscribed to queued %d deliveries; want 0", n)
			}
			later := time.Now().Add(time.Second)

			jobs, err := s.ClaimDue(ctx, later, 3, 100, []string{"wh_b"})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 3 {
				t.Fatalf("claimed %d; want 3 (perWebhook) from wh_a only", len(jobs))
			}
			for _, j := range jobs {
				if j.WebhookID != "wh_a" || j.URL != "https://example.test/wh_a" || j.Secret != "s" || j.Event.Type != event.CaseOpened || len(j.Event.Data) == 0 {
					t.Fatalf("bad job %+v", j)
				}
			}
			again, _ := s.ClaimDue(ctx, later, 10, 100, nil)
			if len(again) != 7 {
				t.Fatalf("second claim got %d; want the 7 not yet claimed", len(again))
			}
			for _, j := range again {
				for _, k := range jobs {
					if j.DeliveryID == k.DeliveryID {
						t.Fatalf("delivery %s claimed twice", j.DeliveryID)
					}
				}
			}
			if none, _ := s.ClaimDue(ctx, later, 10, 100, nil); len(none) != 0 {
				t.Fatalf("claimed %d deliveries already in flight", len(none))
			}
			// Finish: one success, one retry in the future, the rest left in flight.
			err = s.FinishDeliveries(ctx, []webhook.Result{
				{DeliveryID: jobs[0].DeliveryID, Status: webhook.StatusSucceeded, Attempts: 1, AttemptedAt: later, HTTPStatus: 204},
				{DeliveryID: jobs[1].DeliveryID, Status: webhook.StatusPending, Attempts: 1, AttemptedAt: later, NextAttemptAt: later.Add(time.Hour), HTTPStatus: 500, Error: "boom"},
			})
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.ResetInFlight(ctx, later, later.Add(time.Microsecond))
			if err != nil || n != 8 {
				t.Fatalf("ResetInFlight: got %d, %v; want 8", n, err)
			}
			due, _ := s.ClaimDue(ctx, later, 100, 100, nil)
			if len(due) != 8 {
				t.Fatalf("after reset claimed %d; want 8 (not the succeeded one nor the one retrying in an hour)", len(due))
			}
			counts, err := s.CountDeliveries(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if counts[webhook.StatusSucceeded] != 1 || counts[webhook.StatusPending] != 1 || counts[webhook.StatusDelivering] != 8 {
				t.Fatalf("counts %v; want 1 succeeded, 1 pending, 8 delivering", counts)
			}
			d, err := s.GetDelivery(ctx, "wh_a", jobs[1].DeliveryID)
			if err != nil || d.Attempts != 1 || d.LastStatus != 500 || d.LastError != "boom" || d.NextAttemptAt.IsZero() {
				t.Fatalf("retrying delivery: got %+v, %v", d, err)
			}
		})
	}
}

func TestSettingFirstWriterWins(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			v1, err := s.Setting(context.Background(), "k", func() string { return "first" })
			if err != nil {
				t.Fatal(err)
			}
			v2, _ := s.Setting(context.Background(), "k", func() string { return "second" })
			if v1 != "first" || v2 != "first" {
				t.Fatalf("got %q then %q; want first twice", v1, v2)
			}
		})
	}
}
