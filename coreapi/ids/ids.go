// Package ids makes the prefixed random identifiers of API resources, e.g. "case_3k9t...".
package ids

import (
	"crypto/rand"
	"encoding/base32"
)

// Crockford-style lowercase alphabet: no i, l, o, u, so IDs read back unambiguously.
var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns prefix + "_" + 20 random base32 characters (100 bits).
func New(prefix string) string {
	var b [13]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + enc.EncodeToString(b[:])[:20]
}
