package detect

import (
	"encoding/base64"
	"math"
	"strings"
)

// secretDetector finds credentials. Subtypes:
//
//	private_key      PEM block "-----BEGIN ... PRIVATE KEY-----" through its END line
//	aws_access_key   AKIA/ASIA/... followed by 16 upper-case letters or digits
//	aws_secret_key   40 base64 characters with "aws"/"secret" near
//	github_token     ghp_/gho_/ghu_/ghs_/ghr_ + 36, github_pat_ + 82
//	gitlab_token     glpat- + 20
//	slack_token      xoxb-/xoxp-/xoxa-/xoxr-/xoxs-
//	stripe_key       sk_live_/sk_test_/rk_live_/rk_test_
//	openai_key       sk-proj-..., sk-... (48+ characters)
//	anthropic_key    sk-ant-...
//	google_api_key   AIza + 35
//	sendgrid_key     SG.<22>.<43>
//	npm_token        npm_ + 36
//	huggingface_token hf_ + 34
//	jwt              three base64url parts whose header decodes to JSON with "alg"
//	bearer_token     the credential after "Bearer " or "Basic "
//	password, api_key, token, secret   the value of an assignment such as DB_PASSWORD=...,
//	                 "api_key": "...", client_secret: ...
type secretDetector struct{}

const (
	secretKnownScore    = 0.95 // a vendor prefix and exact shape
	secretJWTScore      = 0.95
	secretJWTWeakScore  = 0.6 // JWT shape, header does not decode
	secretPEMScore      = 0.99
	secretBearerScore   = 0.85
	secretAssignStrong  = 0.85 // high-entropy value of a secret-named key
	secretAssignPass    = 0.75 // any plausible value of a password key
	secretAssignKey     = 0.7  // 8+ characters, not a plain word or number, of a key-named key
	secretAssignWeak    = 0.45 // anything else assigned to a token/key-named key
	secretAWSSecret     = 0.85
	secretMaxValue      = 256
	secretMinEntropy    = 3.0 // bits per character of a random-looking value
	secretMaxIdentifier = 64
)

// secretContext is nil: secrets are recognised by their shape or by the name they are assigned
// to, both handled in the detector.
var secretContext *contextRule

func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '.' || c == '~'
}

func (secretDetector) Detect(text string, out []Entity) []Entity {
	out = detectPEM(text, out)
	out = detectTokens(text, out)
	return detectAssignments(text, out)
}

// detectPEM finds private key blocks. The END line is searched once per BEGIN that follows the
// previous END, so repeated BEGIN lines without END stay linear.
func detectPEM(text string, out []Entity) []Entity {
	nextEnd := -2 // -2: not searched yet; -1: none after the last search point
	for i := 0; i < len(text); {
		k := strings.Index(text[i:], "-----BEGIN ")
		if k < 0 {
			break
		}
		s := i + k
		hdrEnd := strings.Index(text[s+11:min(len(text), s+11+64)], "-----")
		if hdrEnd < 0 {
			i = s + 11
			continue
		}
		label := text[s+11 : s+11+hdrEnd]
		body := s + 11 + hdrEnd + 5
		if !strings.HasSuffix(label, "PRIVATE KEY") && label != "PGP PRIVATE KEY BLOCK" {
			i = body
			continue
		}
		if nextEnd == -2 || (nextEnd >= 0 && nextEnd < body) {
			if k := strings.Index(text[body:], "-----END "); k >= 0 {
				nextEnd = body + k
			} else {
				nextEnd = -1
			}
		}
		e := -1
		if nextEnd >= 0 {
			if k := strings.Index(text[nextEnd+9:min(len(text), nextEnd+9+64)], "-----"); k >= 0 {
				e = nextEnd + 9 + k + 5
			}
		}
		if e < 0 {
			// No END line: the block runs to the end of the base64 lines.
			e = body
			for e < len(text) && (isAlnum(text[e]) || text[e] == '+' || text[e] == '/' || text[e] == '=' ||
				text[e] == '\n' || text[e] == '\r' || text[e] == ' ' || text[e] == ':' || text[e] == '-' || text[e] == ',') {
				e++
			}
			for e > body && isSpaceByte(text[e-1]) {
				e--
			}
		}
		out = append(out, Entity{Type: TypeSecret, Subtype: "private_key", Start: s, End: e, Score: secretPEMScore})
		i = e
	}
	return out
}

// awsKeyPrefixes are the four-letter prefixes of AWS access key IDs.
var awsKeyPrefixes = []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"}

// detectTokens classifies each run of token bytes by its prefix and shape.
func detectTokens(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		if !isTokenByte(text[i]) {
			i++
			continue
		}
		s := i
		e := i
		for e < len(text) && isTokenByte(text[e]) {
			e++
		}
		i = e
		if s > 0 && text[s-1] >= 0x80 {
			continue
		}
		for e > s && text[e-1] == '.' { // sentence punctuation
			e--
		}
		for e < len(text) && text[e] == '=' && e-i < 2 { // base64 padding
			e++
		}
		if e-s < 16 || (e < len(text) && text[e] >= 0x80) {
			continue
		}
		if sub, score, ts, te := classifyToken(text, s, e); sub != "" {
			out = append(out, Entity{Type: TypeSecret, Subtype: sub, Start: ts, End: te, Score: score})
		}
	}
	return out
}

// classifyToken returns the subtype, score and span of a secret inside the token text[s:e].
func classifyToken(text string, s, e int) (string, float64, int, int) {
	t := text[s:e]
	all := func(t string, ok func(byte) bool) bool {
		for i := 0; i < len(t); i++ {
			if !ok(t[i]) {
				return false
			}
		}
		return true
	}
	alnum := func(c byte) bool { return isAlnum(c) }
	upperOrDigit := func(c byte) bool { return isUpper(c) || isDigit(c) }
	urlSafe := func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }
	switch {
	case len(t) == 20 && all(t, upperOrDigit):
		for _, p := range awsKeyPrefixes {
			if strings.HasPrefix(t, p) {
				return "aws_access_key", secretKnownScore, s, e
			}
		}
	case len(t) == 40 && (strings.HasPrefix(t, "ghp_") || strings.HasPrefix(t, "gho_") ||
		strings.HasPrefix(t, "ghu_") || strings.HasPrefix(t, "ghs_") || strings.HasPrefix(t, "ghr_")) && all(t[4:], alnum):
		return "github_token", secretKnownScore, s, e
	case strings.HasPrefix(t, "github_pat_") && len(t) >= 60 && all(t[11:], urlSafe):
		return "github_token", secretKnownScore, s, e
	case strings.HasPrefix(t, "glpat-") && len(t) >= 26 && all(t[6:], urlSafe):
		return "gitlab_token", secretKnownScore, s, e
	case len(t) >= 20 && strings.HasPrefix(t, "xox") && strings.IndexByte("baprs", t[3]) >= 0 && t[4] == '-' && all(t[5:], urlSafe):
		return "slack_token", secretKnownScore, s, e
	case (strings.HasPrefix(t, "sk_live_") || strings.HasPrefix(t, "sk_test_") ||
		strings.HasPrefix(t, "rk_live_") || strings.HasPrefix(t, "rk_test_")) && len(t) >= 24 && all(t[8:], alnum):
		return "stripe_key", secretKnownScore, s, e
	case strings.HasPrefix(t, "sk-ant-") && len(t) >= 40 && all(t[7:], urlSafe):
		return "anthropic_key", secretKnownScore, s, e
	case strings.HasPrefix(t, "sk-") && len(t) >= 40 && all(t[3:], urlSafe) && mixedAlnum(t[3:]):
		return "openai_key", secretKnownScore, s, e
	case len(t) == 39 && strings.HasPrefix(t, "AIza") && all(t[4:], urlSafe):
		return "google_api_key", secretKnownScore, s, e
	case strings.HasPrefix(t, "SG.") && len(t) == 69 && t[25] == '.' && all(t[3:25], urlSafe) && all(t[26:], urlSafe):
		return "sendgrid_key", secretKnownScore, s, e
	case len(t) == 40 && strings.HasPrefix(t, "npm_") && all(t[4:], alnum):
		return "npm_token", secretKnownScore, s, e
	case len(t) == 37 && strings.HasPrefix(t, "hf_") && all(t[3:], isAlpha):
		return "huggingface_token", secretKnownScore, s, e
	case strings.HasPrefix(t, "eyJ"):
		if score, je := jwtScore(t); score > 0 {
			return "jwt", score, s, s + je
		}
	case len(t) == 40 && all(t, func(c byte) bool { return isAlnum(c) || c == '/' || c == '+' }) && mixedAlnum(t):
		if hasKeyword(text, s, e, awsSecretWords) {
			return "aws_secret_key", secretAWSSecret, s, e
		}
	}
	return "", 0, 0, 0
}

var awsSecretWords = newKeywords("aws", "secret", "aws_secret_access_key", "secret_access_key", "secretaccesskey")

// mixedAlnum reports whether t has an upper-case letter, a lower-case letter and a digit.
func mixedAlnum(t string) bool {
	var u, l, d bool
	for i := 0; i < len(t); i++ {
		c := t[i]
		u = u || isUpper(c)
		l = l || isLower(c)
		d = d || isDigit(c)
	}
	return u && l && d
}

// jwtScore checks header.payload.signature and returns the score and the token's length.
func jwtScore(t string) (float64, int) {
	d1 := strings.IndexByte(t, '.')
	if d1 < 10 {
		return 0, 0
	}
	d2 := strings.IndexByte(t[d1+1:], '.')
	if d2 < 10 || !strings.HasPrefix(t[d1+1:], "eyJ") {
		return 0, 0
	}
	d2 += d1 + 1
	end := d2 + 1
	for end < len(t) && (isAlnum(t[end]) || t[end] == '_' || t[end] == '-') {
		end++
	}
	for i := 0; i < d2; i++ {
		if c := t[i]; !(isAlnum(c) || c == '_' || c == '-' || c == '.') {
			return 0, 0
		}
	}
	var buf [384]byte
	hdr := t[:d1]
	if base64.RawURLEncoding.DecodedLen(len(hdr)) <= len(buf) {
		if n, err := base64.RawURLEncoding.Decode(buf[:], []byte(hdr)); err == nil && strings.Contains(string(buf[:n]), `"alg"`) {
			return secretJWTScore, end
		}
	}
	return secretJWTWeakScore, end
}

// secretKeys are substrings of identifiers whose value is a secret, with the subtype reported
// and whether any value counts (passwords may be plain words).
var secretKeys = []struct {
	key, subtype string
	anyValue     bool
}{
	{"password", "password", true}, {"passwd", "password", true}, {"passphrase", "password", true},
	{"pwd", "password", true}, {"kennwort", "password", true}, {"passwort", "password", true},
	{"mot_de_passe", "password", true}, {"contraseña", "password", true},
	{"secret", "secret", false}, {"api_key", "api_key", false}, {"apikey", "api_key", false},
	{"api-key", "api_key", false}, {"access_key", "api_key", false}, {"accountkey", "api_key", false},
	{"sharedaccesskey", "api_key", false}, {"private_key", "secret", false},
	{"token", "token", false}, {"credential", "secret", false}, {"auth", "token", false},
}

// detectAssignments finds values assigned to secret-named keys: KEY=value, key: value,
// "key": "value", and "Bearer <token>".
func detectAssignments(text string, out []Entity) []Entity {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == 'B' && (strings.HasPrefix(text[i:], "Bearer ") || strings.HasPrefix(text[i:], "Basic ")) &&
			(i == 0 || !isWordByte(text[i-1])) {
			j := i + strings.IndexByte(text[i:], ' ') + 1
			e := j
			for e < len(text) && e-j < secretMaxValue && (isTokenByte(text[e]) || text[e] == '=') {
				e++
			}
			for e > j && text[e-1] == '.' {
				e--
			}
			if e-j >= 16 && mixedOrEntropic(text[j:e]) {
				out = append(out, Entity{Type: TypeSecret, Subtype: "bearer_token", Start: j, End: e, Score: secretBearerScore})
				i = e - 1
			}
			continue
		}
		if c != ':' && c != '=' {
			continue
		}
		if c == ':' && i+1 < len(text) && text[i+1] == '/' { // "https://"
			continue
		}
		// Identifier before the separator, possibly quoted.
		k := i
		for k > 0 && i-k < 2 && (text[k-1] == ' ' || text[k-1] == '"' || text[k-1] == '\'') {
			k--
		}
		ie := k
		for k > 0 && ie-k < secretMaxIdentifier && (isAlnum(text[k-1]) || text[k-1] == '_' || text[k-1] == '-' || text[k-1] == '.' || text[k-1] >= 0x80) {
			k--
		}
		if k == ie {
			continue
		}
		sub, anyValue := secretKeyKind(text[k:ie])
		if sub == "" {
			continue
		}
		// Value after the separator.
		j := i + 1
		for j < len(text) && j-i < 3 && text[j] == ' ' {
			j++
		}
		var vs, ve int
		if j < len(text) && (text[j] == '"' || text[j] == '\'') {
			q := text[j]
			vs = j + 1
			ve = vs
			for ve < len(text) && ve-vs < secretMaxValue && text[ve] != q && text[ve] != '\n' {
				ve++
			}
			if ve >= len(text) || text[ve] != q {
				continue
			}
		} else {
			vs = j
			ve = vs
			for ve < len(text) && ve-vs < secretMaxValue && !isSpaceByte(text[ve]) && text[ve] != '"' && text[ve] != '\'' {
				ve++
			}
			for ve > vs && strings.IndexByte(",;.)]}>", text[ve-1]) >= 0 {
				ve--
			}
		}
		v := text[vs:ve]
		if !plausibleSecret(v) {
			continue
		}
		// In prose ("Reset your password: click the link") a plain lower-case word after ':' is
		// not a value; it counts only when quoted or assigned with '='.
		if c == ':' && vs == j && allLowerLetters(v) {
			continue
		}
		var score float64
		switch {
		case len(v) >= 12 && mixedOrEntropic(v):
			score = secretAssignStrong
		case anyValue:
			score = secretAssignPass
		case len(v) >= 8 && !allLowerLetters(v) && !isNumber(v):
			score = secretAssignKey
		default:
			score = secretAssignWeak
		}
		out = append(out, Entity{Type: TypeSecret, Subtype: sub, Start: vs, End: ve, Score: score})
		i = ve - 1
	}
	return out
}

// secretKeyKind returns the subtype for an identifier such as DB_PASSWORD or clientSecret.
func secretKeyKind(id string) (string, bool) {
	var buf [secretMaxIdentifier + 8]byte
	lw, ok := lowerInto(buf[:0:len(buf)], id)
	if !ok {
		return "", false
	}
	for _, k := range secretKeys {
		if containsBytes(lw, k.key) {
			// "author", "authority", "oauth_url" and "tokenizer" are not secrets.
			if k.key == "auth" && (containsBytes(lw, "author") || containsBytes(lw, "url") || containsBytes(lw, "method")) {
				continue
			}
			if k.key == "token" && (containsBytes(lw, "tokeniz") || containsBytes(lw, "tokens") || containsBytes(lw, "max_token") || containsBytes(lw, "token_type") || containsBytes(lw, "token_url") || containsBytes(lw, "token_endpoint")) {
				continue
			}
			return k.subtype, k.anyValue
		}
	}
	return "", false
}

func containsBytes(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// plausibleSecret rejects empty values, placeholders and prose.
func plausibleSecret(v string) bool {
	if len(v) < 4 || len(v) > secretMaxValue {
		return false
	}
	switch v[0] {
	case '$', '<', '{', '[', '%', '(':
		return false
	}
	same := true
	for i := 1; i < len(v); i++ {
		if v[i] != v[0] {
			same = false
		}
		if v[i] == ' ' {
			return false
		}
	}
	if same {
		return false
	}
	var buf [24]byte
	if lw, ok := lowerInto(buf[:0:len(buf)], v); ok {
		switch string(lw) {
		case "null", "none", "true", "false", "required", "optional", "string", "empty", "undefined",
			"redacted", "hidden", "secret", "password", "changeme", "changeit", "your_password", "xxxx",
			"example", "placeholder", "omitted", "masked", "n/a", "todo", "tbd", "env", "bytes":
			return false
		}
	}
	return true
}

// mixedOrEntropic reports whether v looks random: letters and digits mixed, or high entropy.
func mixedOrEntropic(v string) bool {
	var l, d bool
	for i := 0; i < len(v); i++ {
		l = l || isAlpha(v[i])
		d = d || isDigit(v[i])
	}
	return l && d && entropy(v) >= secretMinEntropy
}

// entropy returns the Shannon entropy of v in bits per byte.
func entropy(v string) float64 {
	var counts [256]uint16
	for i := 0; i < len(v); i++ {
		counts[v[i]]++
	}
	h := 0.0
	n := float64(len(v))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func allLowerLetters(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isLower(v[i]) {
			return false
		}
	}
	return true
}

func isNumber(v string) bool {
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) && v[i] != '.' && v[i] != '-' {
			return false
		}
	}
	return true
}
