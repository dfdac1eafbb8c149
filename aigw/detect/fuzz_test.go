package detect

import (
	"testing"
)

// fuzzSeeds are shared by the fuzz targets: one realistic line per type, plus odd bytes.
var fuzzSeeds = []string{
	"",
	"Hi, my name is John Smith, mail john.smith@example.com or call (415) 555-2671.",
	"card 4111 1111 1111 1111, SSN 123-45-6788, IBAN DE89 3704 0044 0532 0130 00",
	"ip 192.168.1.10 and 2001:db8::1, MAC 00:1A:2B:3C:4D:5E, https://example.com/a_(b)",
	"born 12 March 1985; 742 Evergreen Terrace, Springfield, IL 62704; Hauptstraße 12, 10115 Berlin",
	"AKIAIOSFODNN7EXAMPLE ghp_abcdefghijklmnopqrstuvwxyz0123456789 DB_PASSWORD=x1y2z3w4",
	"-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----",
	"Best regards,\nZoltán Kovács\n",
	"\xff\xfe\x80 M\xfcller @ :: 1.2.3.4.5 +1 (",
	"www.WWW.w.ww. http://[::1]:80/ eyJ.eyJ. Bearer Basic",
	"Owner: Anahera Virtanen; my name is keoni quispe; The Lincoln Park branch; Thandiwe Mbeki said",
	"card 4111.1111.1111.1111, 3787  805886  09884; SSN 739.02.0225; born 11th of Nov 1990",
	"+1-617-908-8342 ext. 487; Flat 8, 262 Kingsway, London WC2B 4NH; PO Box 4674, Anchorage, AK 99547",
	"Rue de Rivoli 48, 75003 Paris; Damrak 80, 1012 LP Amsterdam; 4521 Broadway, New York, NY 10040",
	"name;dob;ssn\nKalani Kahale;1991-02-03;575 21 4430\n\"A B\",\"a@b.co\"|x|\t",
	"[09:15] Atieno: hi\nuser: hi, i'm ngozi adeyemi\nname=\"Ana Lima\" Ana Lima <ana@",
	"No  Name   DOB           SSN\n01  ANA    03 JUN 1975   587 44 1026\nUATP 188773552874477 4241 3196\n5532 2555 12/27",
	"昭和58年2月14日 21.XI.1983 14MAR79 1989. május 14. ngày 8 tháng 3 năm 1990 ٤٢٤١ ٣١٩٦ 2/14/1951 (75 y/o)",
}

// FuzzScan checks the engine's invariants on arbitrary input: no panic, entities within bounds,
// sorted, not overlapping, Text equal to the span.
func FuzzScan(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	e, err := New(Options{MinScore: 0.01})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkEntities(t, text, e.Scan(text))
	})
}

// FuzzDetectors calls every detector directly (without the engine's filtering) and checks that
// each candidate lies within the text.
func FuzzDetectors(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	loadGazetteer()
	dets := make([]Detector, len(registry))
	for i, r := range registry {
		dets[i] = r.new(Options{DefaultRegion: DefaultRegion})
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i, d := range dets {
			for _, c := range d.Detect(text, nil) {
				if c.Start < 0 || c.End > len(text) || c.Start >= c.End {
					t.Fatalf("%s: candidate %+v out of bounds for len %d", registry[i].typ, c, len(text))
				}
				if c.Type != registry[i].typ {
					t.Fatalf("%s: candidate of type %q", registry[i].typ, c.Type)
				}
			}
		}
	})
}
