package store

// CachedCredentials is how many MQTT credentials s serves from memory (credcache.go).
func CachedCredentials(s *Store) int {
	s.creds.mu.RLock()
	defer s.creds.mu.RUnlock()
	return len(s.creds.byUser)
}
