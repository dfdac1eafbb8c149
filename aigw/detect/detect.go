// Package detect finds sensitive entities (personal data and secrets) in text, with no I/O.
package detect

//go:generate go run ./internal/gencorpus

// Entity types reported by the engine.
const (
	TypeEmail         = "email"
	TypePhone         = "phone"
	TypeCreditCard    = "credit_card"
	TypeSSN           = "ssn"
	TypeIBAN          = "iban"
	TypeIP            = "ip_address"
	TypeMAC           = "mac_address"
	TypeURL           = "url"
	TypeDateOfBirth   = "date_of_birth"
	TypeStreetAddress = "street_address"
	TypePerson        = "person"
	TypeSecret        = "secret"
)

// Entity is one detected span of text.
type Entity struct {
	Type    string  // one of the Type constants
	Subtype string  // kind of secret for TypeSecret (see README), brand for TypeCreditCard; empty otherwise
	Start   int     // byte offset of the first byte
	End     int     // byte offset just past the last byte
	Text    string  // the text between Start and End
	Score   float64 // confidence in [0, 1], after context words
}

// Detector finds candidates of one type and appends them to out. Candidates carry a base score
// that the engine then adjusts with context words.
type Detector interface {
	Detect(text string, out []Entity) []Entity
}
