package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/edgewan/edgewan/controller/mqtt"
)

// credCache holds every active MQTT credential in memory (SQLite only), so that the CONNECTs
// of a whole fleet reconnecting after a restart are not each a database read: in execution
// traces of 10,000 agents reconnecting, 200-830 CONNECT handlers at a time waited for one of
// the 8 SQLite read connections (each held across scheduling delays on a saturated machine),
// and their CONNACKs then came out in a burst (docs/benchmarks.md, "What stalls the CONNACKs").
//
// It stays right because the process owns its SQLite database and every change of
// mqtt_credentials goes through this Store, which forgets the entries concerned before it
// changes them; nothing is ever added after the load, so a lookup that misses reads the
// database, the truth. PostgreSQL may be shared by other controllers: no cache there.
type credCache struct {
	mu     sync.RWMutex
	byUser map[string]mqtt.Credential // nil: not loaded, every lookup reads the database
	gen    uint64                     // counts changes; a load that overlapped one is dropped
}

// LoadMQTTCredentials reads every active MQTT credential in one query and serves
// MQTTCredential from memory from then on (SQLite; a no-op on PostgreSQL). Call it before the
// embedded broker accepts connections.
func (s *Store) LoadMQTTCredentials(ctx context.Context) error {
	if s.postgres {
		return nil
	}
	s.creds.mu.RLock()
	gen := s.creds.gen
	s.creds.mu.RUnlock()
	all, err := s.MQTTCredentials(ctx)
	if err != nil {
		return fmt.Errorf("store.LoadMQTTCredentials: %w", err)
	}
	m := make(map[string]mqtt.Credential, len(all))
	for _, c := range all {
		m[c.Username] = *c
	}
	s.creds.mu.Lock()
	defer s.creds.mu.Unlock()
	if s.creds.gen == gen { // else a change may not be in what was read: stay on the database
		s.creds.byUser = m
	}
	return nil
}

// CachedMQTTCredential returns username's credential from memory, if loaded and there
// (mqtt.CredentialMemory: the broker asks this first).
func (s *Store) CachedMQTTCredential(username string) (*mqtt.Credential, bool) {
	s.creds.mu.RLock()
	defer s.creds.mu.RUnlock()
	c, ok := s.creds.byUser[username]
	if !ok {
		return nil, false
	}
	return &c, true
}

// forgetCredentials drops from memory the credentials for which drop is true, before the
// caller changes them in the database (until it commits, a lookup reads the old row there, as
// without the cache).
func (s *Store) forgetCredentials(drop func(mqtt.Credential) bool) {
	s.creds.mu.Lock()
	defer s.creds.mu.Unlock()
	s.creds.gen++
	for u, c := range s.creds.byUser {
		if drop(c) {
			delete(s.creds.byUser, u)
		}
	}
}

// forgetCredential is forgetCredentials for one username: the map's key, no scan.
func (s *Store) forgetCredential(username string) {
	s.creds.mu.Lock()
	defer s.creds.mu.Unlock()
	s.creds.gen++
	delete(s.creds.byUser, username)
}
