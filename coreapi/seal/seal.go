// Package seal encrypts secrets at rest (AES-256-GCM) with a key kept in a file apart from the
// database, so that a copy of the database alone reveals none of them.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// prefix marks a sealed value (format version 1: base64 of nonce and ciphertext).
const prefix = "v1:"

// Key seals and opens values. Safe for concurrent use.
type Key struct{ aead cipher.AEAD }

// Load reads the 32-byte key at path, creating it (and its directory) on first use. The file is
// kept at mode 0600 and a directory it creates at 0700, whatever the umask; an existing key
// readable by others is narrowed to 0600.
func Load(path string) (*Key, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("seal.Load: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("seal.Load: %w", err)
		}
		_, werr := f.Write(key)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("seal.Load: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("seal.Load: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("seal.Load: key %s: want 32 bytes, have %d", path, len(key))
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o600 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("seal.Load: %w", err)
		}
	}
	return New(key)
}

// New returns a Key for 32 bytes of key material.
func New(key []byte) (*Key, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal.New: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal.New: %w", err)
	}
	return &Key{aead: aead}, nil
}

// Seal encrypts plaintext, bound to owner (e.g. the record's ID): a sealed value moved to
// another record does not open.
func (k *Key) Seal(owner string, plaintext []byte) string {
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := k.aead.Seal(nonce, nonce, plaintext, []byte(owner))
	return prefix + base64.StdEncoding.EncodeToString(out)
}

// Open decrypts a value Seal made for owner.
func (k *Key) Open(owner, sealed string) ([]byte, error) {
	if !IsSealed(sealed) {
		return nil, errors.New("seal: not a sealed value")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[len(prefix):])
	if err != nil || len(raw) < k.aead.NonceSize() {
		return nil, errors.New("seal: corrupt sealed value")
	}
	n := k.aead.NonceSize()
	out, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(owner))
	if err != nil {
		return nil, errors.New("seal: the value does not open with this key (was the key replaced?)")
	}
	return out, nil
}

// IsSealed reports whether v has the form of a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }
