package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/document/documenttest"
	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/store"
)

// docEnv starts a gateway with document capture on st, sealing uploads with keyFile.
func docEnv(t *testing.T, st *store.Store, keyFile string, o func(*gateway.DocumentOptions)) *env {
	t.Helper()
	return newEnv(t, st, func(opts *gateway.Options) {
		opts.AuditKeyFile = keyFile
		opts.Documents = st.Gateway()
		if o != nil {
			o(&opts.DocumentOptions)
		}
	})
}

// runWorker runs the service's background work until the test ends or stop is called.
func runWorker(t *testing.T, e *env) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.svc.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func waitDoc(t *testing.T, e *env, id string) *gateway.Document {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := e.svc.GetDocument(context.Background(), user, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != gateway.DocProcessing {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %s still processing", id)
		}
		time.Sleep(20 * time.Millisecond) // polling the worker, bounded by the deadline
	}
}

// TestDocumentsSurviveRestart: an upload queued by one controller that stopped before
// processing it is captured by the next one; one whose upload cannot be opened any more, or
// whose extraction was interrupted too often, fails with the reason. None stays processing.
func TestDocumentsSurviveRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		key := filepath.Join(t.TempDir(), "audit.key")
		first := docEnv(t, st, key, nil) // its worker never runs: it "stops" before
		up := gateway.Upload{Project: "proj", Filename: "scan.pdf", Data: documenttest.ScannedPDF(t, true, documenttest.Invoice), Async: true}
		queued, done, err := first.svc.CaptureDocument(ctx, user, "req_1", up)
		if err != nil || done || queued.Status != gateway.DocProcessing {
			t.Fatalf("CaptureDocument: %+v %v %v", queued, done, err)
		}
		lost, _, err := first.svc.CaptureDocument(ctx, user, "req_2", gateway.Upload{Project: "proj", Data: []byte(documenttest.Invoice), Async: true})
		if err != nil {
			t.Fatal(err)
		}
		first.svc.Close()

		// A controller with another audit key cannot open the second upload: it fails, saying
		// why. (It opens neither; the first is left to the next controller by a short lease.)
		other := docEnv(t, st, filepath.Join(t.TempDir(), "other.key"), func(o *gateway.DocumentOptions) { o.Lease = 50 * time.Millisecond })
		cd, err := st.Gateway().ClaimDocument(ctx, time.Now(), time.Now().Add(time.Hour)) // hold the first
		if err != nil || cd == nil || cd.Doc.ID != queued.ID {
			t.Fatalf("claim: %+v %v", cd, err)
		}
		stopOther := runWorker(t, other)
		d := waitDoc(t, other, lost.ID)
		if d.Status != gateway.DocFailed || !strings.Contains(d.Reason, "cannot be read") {
			t.Fatalf("the unreadable upload: status %s reason %q", d.Status, d.Reason)
		}
		// Stopped before the first is released: with the wrong key it would claim it and fail
		// it as unreadable before the next controller got to it.
		stopOther()

		// The next controller with the right key resumes the first once the lease is released.
		if err := st.Gateway().ReleaseDocument(ctx, queued.ID, cd.ClaimedUntil); err != nil {
			t.Fatal(err)
		}
		next := docEnv(t, st, key, nil)
		runWorker(t, next)
		d = waitDoc(t, next, queued.ID)
		if d.Status != gateway.DocCaptured || d.Pages[0].Method != "ocr" || d.Type != "invoice" {
			t.Fatalf("resumed document: %+v", d)
		}
		found := false
		for _, f := range d.Fields {
			found = found || f.Name == "invoice_number" && f.Value == "INV-2024-0042"
		}
		if !found {
			t.Errorf("resumed document fields: %+v", d.Fields)
		}
	})
}

// TestDocumentsInterrupted: a document whose extraction keeps being interrupted fails after
// MaxAttempts.
func TestDocumentsInterrupted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		key := filepath.Join(t.TempDir(), "audit.key")
		e := docEnv(t, st, key, func(o *gateway.DocumentOptions) { o.MaxAttempts = 1 })
		d, _, err := e.svc.CaptureDocument(ctx, user, "req_1", gateway.Upload{Project: "proj", Data: []byte(documenttest.Invoice), Async: true})
		if err != nil {
			t.Fatal(err)
		}
		// A worker that took it and died: its lease has ended.
		if cd, err := st.Gateway().ClaimDocument(ctx, time.Now(), time.Now().Add(-time.Second)); err != nil || cd == nil {
			t.Fatalf("claim: %v %v", cd, err)
		}
		runWorker(t, e)
		got := waitDoc(t, e, d.ID)
		if got.Status != gateway.DocFailed || !strings.Contains(got.Reason, "interrupted") {
			t.Fatalf("status %s reason %q", got.Status, got.Reason)
		}
	})
}
