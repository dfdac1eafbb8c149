package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/seal"
)

// auditWriter stores audit records by group commit: a request hands its record over and waits
// until it is committed, and records that arrive while a commit runs go together in the next
// one. Under light load that is one insert per request; under heavy load one transaction
// carries many, so the log never loses an answered request and never becomes the bottleneck.
type auditWriter struct {
	store   Store
	notify  func()
	ch      chan *pending
	seq     int64
	done    chan struct{} // closed by close: take no more records
	stopped chan struct{} // closed by run when it has committed the last queued record
	once    sync.Once
}

type pending struct {
	r    *Record
	evs  []*event.Envelope
	errc chan error
}

const auditBatch = 256

func newAuditWriter(st Store, lastSeq int64, notify func()) *auditWriter {
	return &auditWriter{store: st, notify: notify, ch: make(chan *pending, 4*auditBatch), seq: lastSeq, done: make(chan struct{}), stopped: make(chan struct{})}
}

// write commits r with the events it raises, or returns why it could not.
func (w *auditWriter) write(ctx context.Context, r *Record, evs []*event.Envelope) error {
	p := &pending{r: r, evs: evs, errc: make(chan error, 1)}
	// Queue the record whenever there is room, even if the client went away: its prompt may
	// have reached the model already. (A select with ctx.Done() ready too would pick at random
	// and drop half of them.) Only a full queue makes a gone client give up.
	select {
	case w.ch <- p:
	default:
		select {
		case w.ch <- p:
		case <-w.done:
			return errors.New("gateway: audit log closed")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The record is queued: wait for the commit even if the client went away, so what the
	// gateway answered is always in the log.
	select {
	case err := <-p.errc:
		return err
	case <-w.stopped: // queued after the last commit of a stopping writer
		select {
		case err := <-p.errc:
			return err
		default:
			return errors.New("gateway: audit log closed")
		}
	}
}

// run commits until close; then it commits what is queued and returns.
func (w *auditWriter) run() {
	defer close(w.stopped)
	batch := make([]*pending, 0, auditBatch)
	for {
		var p *pending
		stopping := false
		select {
		case p = <-w.ch:
		case <-w.done:
			stopping = true
		}
		batch = batch[:0]
		if p != nil {
			batch = append(batch, p)
		}
	fill:
		for stopping || len(batch) < auditBatch {
			select {
			case p := <-w.ch:
				batch = append(batch, p)
				if len(batch) == auditBatch {
					w.commit(batch)
					batch = batch[:0]
				}
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			w.commit(batch)
		}
		if stopping {
			return
		}
	}
}

func (w *auditWriter) commit(batch []*pending) {
	rs := make([]*Record, len(batch))
	var evs []*event.Envelope
	for i, p := range batch {
		w.seq++
		p.r.Seq = w.seq
		rs[i] = p.r
		evs = append(evs, p.evs...)
	}
	n, err := w.store.InsertRecords(context.Background(), rs, evs)
	if err == nil && n > 0 {
		w.notify() // wake the webhook dispatcher only when a webhook wants these events
	}
	if err != nil {
		slog.Error("gateway: writing audit records", "count", len(rs), "err", err)
		w.seq -= int64(len(batch))
	}
	for _, p := range batch {
		p.errc <- err
	}
}

// close stops taking records and waits for the queued ones to commit.
func (w *auditWriter) close() {
	w.once.Do(func() { close(w.done) })
	<-w.stopped
}

// sealer encrypts raw inputs at rest with the audit key, kept in a file beside the data, never
// in the database: a database dump alone does not reveal them.
type sealer = seal.Key

func loadSealer(path string) (*sealer, error) {
	k, err := seal.Load(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: audit key: %w", err)
	}
	return k, nil
}

// auditResealer is the store's side of an audit key rotation (controller/store implements it).
type auditResealer interface {
	ResealAudit(ctx context.Context, reseal func(owner, sealed string) (string, error)) (changed int, failed []string, err error)
}

// rotateAuditKey reseals with k what only the previous audit key (PATH.previous, when it
// exists) opens: the rotation of docs/security.md. What neither key opens stays as it is and is
// logged (its raw input cannot be shown; a pending document must be uploaded again).
func rotateAuditKey(ctx context.Context, st any, path string, k *sealer) error {
	if path == "" {
		return nil
	}
	prevPath := path + ".previous"
	if _, err := os.Stat(prevPath); err != nil {
		return nil
	}
	rs, ok := st.(auditResealer)
	if !ok {
		return fmt.Errorf("gateway: %s exists, but this store cannot reseal the audit log", prevPath)
	}
	prev, err := seal.Load(prevPath)
	if err != nil {
		return fmt.Errorf("gateway: previous audit key: %w", err)
	}
	n, failed, err := rs.ResealAudit(ctx, func(owner, sealed string) (string, error) {
		if _, err := k.Open(owner, sealed); err == nil {
			return sealed, nil
		}
		plain, err := prev.Open(owner, sealed)
		if err != nil {
			return "", err
		}
		return k.Seal(owner, plain), nil
	})
	if err != nil {
		return err
	}
	slog.Info("gateway: audit log resealed with the new audit key; delete the previous one", "resealed", n, "previous", prevPath)
	if len(failed) > 0 {
		slog.Error("gateway: sealed raw inputs or uploads open with neither audit key; left as they are", "count", len(failed), "first", failed[0])
	}
	return nil
}
