package gateway

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/edgewan/edgewan/coreapi/event"
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

// sealer encrypts raw inputs at rest (AES-256-GCM) with a key kept in a file beside the data,
// never in the database: a database dump alone does not reveal them.
type sealer struct{ aead cipher.AEAD }

// loadSealer reads the key file, creating it (mode 0600) on first use.
func loadSealer(path string) (*sealer, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("gateway: audit key: %w", err)
		}
		if err := os.WriteFile(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("gateway: audit key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("gateway: audit key: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("gateway: audit key %s: want 32 bytes, have %d", path, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plaintext, binding it to the record ID so a sealed value cannot be moved to
// another record.
func (s *sealer) seal(recordID string, plaintext []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := s.aead.Seal(nonce, nonce, plaintext, []byte(recordID))
	return "v1:" + base64.StdEncoding.EncodeToString(out)
}

func (s *sealer) open(recordID, sealed string) ([]byte, error) {
	if len(sealed) < 3 || sealed[:3] != "v1:" {
		return nil, errors.New("gateway: unknown sealed format")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[3:])
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, errors.New("gateway: corrupt sealed value")
	}
	n := s.aead.NonceSize()
	return s.aead.Open(nil, raw[:n], raw[n:], []byte(recordID))
}
