package guard

import (
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/detect"
)

func TestMask(t *testing.T) {
	tests := []struct {
		name, typ, subtype, text, want string
	}{
		{"card spaced", detect.TypeCreditCard, "visa", "4111 1111 1111 1111", "**** **** **** 1111"},
		{"card dashed", detect.TypeCreditCard, "amex", "3782-822463-10005", "****-******-*0005"},
		{"ssn", detect.TypeSSN, "", "123-45-6789", "***-**-6789"},
		{"phone plus", detect.TypePhone, "", "+1 (415) 555-2671", "+* (***) ***-2671"},
		{"phone national", detect.TypePhone, "", "030 12345678", "*** ****5678"},
		{"iban", detect.TypeIBAN, "", "DE89 3704 0044 0532 0130 00", "DE** **** **** **** **30 00"},
		{"email", detect.TypeEmail, "", "jane.doe@example.com", "****.***@example.com"},
		{"url path", detect.TypeURL, "", "https://user:pw@example.com:8443/a/b?x=1#f", "https://****:**@example.com:8443/*/*?*=*#*"},
		{"url host only", detect.TypeURL, "", "https://shop.example.com/", "https://****.*******.com/"},
		{"url www", detect.TypeURL, "", "www.example.com", "***.*******.com"},
		{"url ipv6 host only: nothing kept", detect.TypeURL, "", "http://[::1]", "************"},
		{"ipv4", detect.TypeIP, "", "192.168.1.10", "192.***.*.**"},
		{"ipv6", detect.TypeIP, "", "2001:db8::ff00:42", "2001:***::****:**"},
		{"mac colons", detect.TypeMAC, "", "00:1A:2B:3C:4D:5E", "00:1A:2B:**:**:**"},
		{"mac dots", detect.TypeMAC, "", "0011.2233.4455", "0011.22**.****"},
		{"person", detect.TypePerson, "", "Zoltán Kovács", "Z***** K*****"},
		{"person particle", detect.TypePerson, "", "Jean-Luc van der Berg", "J***-*** v** d** B***"},
		{"dob", detect.TypeDateOfBirth, "", "12 March 1985", "** ***** ****"},
		{"address", detect.TypeStreetAddress, "", "742 Evergreen Terrace, Springfield, IL 62704", "*** ********* *******, ***********, ** *****"},
		{"secret vendor keeps prefix", detect.TypeSecret, "github_token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_************************************"},
		{"secret password all", detect.TypeSecret, "password", "hunter2-is-long-enough!", "***********************"},
		{"secret short vendor", detect.TypeSecret, "jwt", "eyJhbGciOi", "**********"},
		{"secret pem keeps layout", detect.TypeSecret, "private_key", "-----BEGIN KEY-----\nAB\n-----END KEY-----", "********** ********\n**\n******** ********"},
		{"punctuation only", detect.TypeSecret, "password", "!@#$%^&*", "********"},
		{"no letters or digits", detect.TypePerson, "", "--", "**"},
		{"invalid utf-8", detect.TypePerson, "", "Jo\xffe", "J**e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mask(tt.typ, tt.subtype, tt.text)
			if got != tt.want {
				t.Errorf("mask(%s, %q) = %q; want %q", tt.typ, tt.text, got, tt.want)
			}
			if got == tt.text {
				t.Errorf("mask(%s, %q) left the value unchanged", tt.typ, tt.text)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, typ, a, b string
		same            bool
	}{
		{"email case", detect.TypeEmail, "Jane.Doe@Example.com", "jane.doe@example.com", true},
		{"phone formatting", detect.TypePhone, "(415) 555-2671", "415.555.2671", true},
		{"phone plus differs", detect.TypePhone, "+1 415 555 2671", "415 555 2671", false},
		{"card separators", detect.TypeCreditCard, "4111-1111-1111-1111", "4111 1111 1111 1111", true},
		{"iban spaces and case", detect.TypeIBAN, "DE89 3704 0044 0532 0130 00", "de89370400440532013000", true},
		{"mac separators", detect.TypeMAC, "00:1A:2B:3C:4D:5E", "001a.2b3c.4d5e", true},
		{"ipv6 canonical", detect.TypeIP, "2001:0db8:0000::1", "2001:db8::1", true},
		{"person spaces and case", detect.TypePerson, "John  Smith", "john smith", true},
		{"person differs", detect.TypePerson, "John Smith", "Jon Smith", false},
		{"secret is exact", detect.TypeSecret, "AbC123xyz", "abc123xyz", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			na, nb := normalize(tt.typ, tt.a), normalize(tt.typ, tt.b)
			if (na == nb) != tt.same {
				t.Errorf("normalize(%q) = %q, normalize(%q) = %q; want same = %v", tt.a, na, tt.b, nb, tt.same)
			}
		})
	}
}

func TestHashTag(t *testing.T) {
	k1, k2 := []byte("project-one-key-0123"), []byte("project-two-key-0123")
	a := hashTag(k1, detect.TypeEmail, "jane@example.com")
	tests := []struct {
		name string
		got  string
		same bool
	}{
		{"same key same value", hashTag(k1, detect.TypeEmail, "jane@example.com"), true},
		{"other value", hashTag(k1, detect.TypeEmail, "john@example.com"), false},
		{"other key", hashTag(k2, detect.TypeEmail, "jane@example.com"), false},
	}
	if !strings.HasPrefix(a, "[EMAIL:") || len(a) != len("[EMAIL:]")+hashHexLen {
		t.Fatalf("hashTag = %q; want [EMAIL:<%d hex>]", a, hashHexLen)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.got == a) != tt.same {
				t.Errorf("got %q vs %q; want same = %v", tt.got, a, tt.same)
			}
		})
	}
}
