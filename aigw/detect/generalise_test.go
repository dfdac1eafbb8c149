package detect

import (
	"os"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// heldOutEngine returns an engine whose name model never saw the names of
// namemodel.HeldOutOrigins (the origins every name of the generalisation corpus comes from).
func heldOutEngine(t *testing.T, origins []string) *Engine {
	t.Helper()
	c, err := namemodel.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := namemodel.Build(c, "gazetteer", origins...)
	if err != nil {
		t.Fatal(err)
	}
	return newEngine(t, Options{nameModel: m})
}

// TestGeneralisation scores detection on text of kinds it was not tuned on: templates C,
// names of origins the name model was trained without (and that the gazetteer does not hold),
// addresses of countries the tuned corpora never had, and card, SSN, date and extension forms
// they never had. The targets are the issue's: F2 >= 0.90, precision >= 0.97, card and SSN
// recall >= 0.99.
//
// The development split (other templates, namemodel.DevOrigins, other countries) is the one
// tuning may look at (-quality.errors); the held-out split does not print its errors (they were
// read once, for the 2026-11-24 fixes: docs/benchmarks.md says so beside its figures).
func TestGeneralisation(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		origins    []string
		minF2      float64
	}{
		{"held-out", "testdata/corpus_generalise.jsonl", namemodel.HeldOutOrigins, 0.90},
		{"dev", "testdata/corpus_generalise_dev.jsonl", namemodel.DevOrigins, 0.90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := heldOutEngine(t, tc.origins)
			samples := loadCorpus(t, tc.file)
			if len(samples) < 1000 {
				t.Fatalf("got %d samples; want at least 1000", len(samples))
			}
			if tc.name == "held-out" {
				old := *showErrors
				*showErrors = 0
				defer func() { *showErrors = old }()
			}
			per, total := evaluate(t, e, samples)
			t.Log(qualityTable("generalise "+tc.name, per, total))
			checkTargets(t, per, total, tc.minF2)
		})
	}
}

// TestRealistic scores the shipped engine on hand-written sets, each written and committed
// before the detector was first run on it: set 1 before issue 11's work, sets 2-7 on 2026-11-24
// after successive rounds of work (set 8 too). The causes of sets 1-3's errors were then fixed by general
// rules, set 4's errors were listed in the issue, and the name rescorer (namerescore.go) is
// trained on sets 1-4, so their figures here are training figures (docs/benchmarks.md has
// their leave-one-set-out figures). Set 5 was written before the rescorer and is the blind set:
// its errors are never printed (-quality.errors is ignored for it), so its figures stay honest.
// Set 6 (layouts: tables, transcripts, lists, lower case, all capitals) was written before
// layout.go and never prints its errors either; its author then wrote layout.go, so it is
// blind to errors but not to the kinds of layout.
// Set 7 (quoted e-mails, git logs, contracts, discharge summaries, configs, SMS, court lists,
// citations, invoices, nine languages, OCR noise) was written by another helper before any of
// its changes and never prints its errors either. Set 8 (chat exports, Slack JSON, pasted
// sheets, voice transcripts, ads, manifests, vCard/GEDCOM, non-Latin scripts) was written by
// detect4 before any of its changes, committed alone, and never prints its errors either.
// Set 9 (ten non-Latin scripts, referral letters, claim forms, tenancy and payroll records,
// reviews, forums, minutes, CRM exports, things named after people) was written by detect6 and
// committed before the detector ran on it; it is a study set: its errors are printed and read.
// Set 10 (tribunal judgments, Hansard, credits, crew lists, registers, statements, labels,
// e-mail threads in Hungarian, Hebrew and Japanese, Thai, Swahili, Polish and Turkish notices)
// was written by set10, who never ran the detector on it; committed alone, errors never printed
// until 2026-11-25 (first run P 0.818 / F2 0.701): since then a study set, errors printed and read.
// Set 11 (SMS, invoices, signatures, forms, CSV, chat, contact pages and letters of 36 countries,
// with phones in national formats, addresses of each country's shape, role mailboxes of many
// languages and dates of birth) was written by detect7 and committed before the detector ran
// on it; a study set like set 9: its errors are printed and read.
// Set 12 (sports reports and commentary, results sheets, letters and corrections, rotas,
// rosters, donor rolls, appointment letters, LDIF/ICS/CODEOWNERS/patch trailers, forms of many
// countries, 30 languages and voices) was written by set12, who never ran the detector on it;
// committed alone, errors never printed, floors 0 until the lead's first run.
// Set 13 (sports and court reports, reviews, blogs, fiction, press releases, class notes,
// obituaries and announcements with cue-less names in running text, and organisations, places,
// horses, boats and products named like people) was written by detect8 and committed before the
// detector ran on it; a study set: its errors are printed and read.
// Set 14 (names without honorifics in non-Latin scripts and romanised, addresses of more
// countries) was written by detect9 and committed before the detector ran on it; a study set.
// Set 15 (rosters, rotas, results and scorecards, sports commentary, team sheets, seating
// plans, donor lists, CSV/TSV rows, tables in capitals, "Family, Given" orders, initials,
// single given names, with teams, horses, venues, products, places and organisations in the
// same structures) was written by detect10 and committed before the detector ran on it; a
// study set: its errors are printed and read.
// Set 16 (phone numbers of 33 countries as people write them, with look-alike identifiers) was
// written by detect11 and committed before the detector ran on it; a study set.
// Set 19 (running text: sports commentary and scorecards, bulletins, minutes, announcements
// with titles and honorifics of many languages, lower-case and capitals, things named after
// people) was written by detect13 and committed before the detector ran on it; a study set.
// Set 20 (names in ten non-Latin scripts and romanised family-first names, with places, streets
// and organisations of those scripts) was written by detect14 and committed before the detector
// ran on it; a study set.
// Set 22 (cards of every network and layout, SSNs in all forms, dates of birth of many
// languages in forms, tables, exports and chat, with look-alike negatives) was written by ids17
// and committed before the detector ran on it; a study set. Its card recall floor is 1.
// Set 17 (69 texts of kinds and voices no other header names: manifests, depositions, package
// metadata, SIP/RADIUS/CDR/Jenkins/Terraform output, SEPA XML, registers and certificates,
// notices and lists in 25 languages, 9 scripts and about 40 countries, with things named after
// people) was written by set17, who never ran the detector on it; committed alone, errors never
// printed (but for its four card misses, read by the lead), first run by the lead: the blind set
// now.
// Each set's floors guard against regressions just under its measured figures.
func TestRealistic(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tc := range []struct {
		file          string
		minF2, minP   float64
		minCardRecall float64
	}{
		{"testdata/realistic_holdout.txt", realisticMinF2, realisticMinPrecision, 1},
		{"testdata/realistic_holdout2.txt", realistic2MinF2, realistic2MinPrecision, 1},
		{"testdata/realistic_holdout3.txt", realistic3MinF2, realistic3MinPrecision, 1},
		{"testdata/realistic_holdout4.txt", realistic4MinF2, realistic4MinPrecision, 1},
		{"testdata/realistic_holdout5.txt", realistic5MinF2, realistic5MinPrecision, 1},
		{"testdata/realistic_holdout6.txt", realistic6MinF2, realistic6MinPrecision, 1},
		{"testdata/realistic_holdout7.txt", realistic7MinF2, realistic7MinPrecision, 1},
		{"testdata/realistic_holdout8.txt", realistic8MinF2, realistic8MinPrecision, 1},
		{"testdata/realistic_study9.txt", realistic9MinF2, realistic9MinPrecision, 1},
		{"testdata/realistic_study11.txt", realistic11MinF2, realistic11MinPrecision, 1},
		// Set 10 was blind until 2026-11-25 (first run P 0.818 / F2 0.701, errors never printed);
		// since then it is a study set like 9 and 11: detect8 reads its errors.
		{"testdata/realistic_holdout10.txt", realistic10MinF2, realistic10MinPrecision, 1},
		{"testdata/realistic_study13.txt", realistic13MinF2, realistic13MinPrecision, 1},
		{"testdata/realistic_study15.txt", realistic15MinF2, realistic15MinPrecision, 1},
		// Set 12 was blind until 2026-11-25 03:20 UTC (errors never printed before); since then a
		// study set: set 17 is the blind one.
		{"testdata/realistic_holdout12.txt", realistic12MinF2, realistic12MinPrecision, 1},
		{"testdata/realistic_study14.txt", realistic14MinF2, realistic14MinPrecision, 1},
		{"testdata/realistic_study16.txt", realistic16MinF2, realistic16MinPrecision, 1},
		{"testdata/realistic_study18.txt", realistic18MinF2, realistic18MinPrecision, 1},
		{"testdata/realistic_study19.txt", realistic19MinF2, realistic19MinPrecision, 1},
		{"testdata/realistic_study20.txt", realistic20MinF2, realistic20MinPrecision, 1},
		{"testdata/realistic_study21.txt", realistic21MinF2, realistic21MinPrecision, 1},
		{"testdata/realistic_study22.txt", realistic22MinF2, realistic22MinPrecision, 1},
		{"testdata/realistic_study23.txt", realistic23MinF2, realistic23MinPrecision, 1},
		// Set 17 is blind: written by set17 before the detector ran on it; first run by the lead
		// (its card misses were read once; see realistic17MinF2).
		{"testdata/realistic_holdout17.txt", realistic17MinF2, realistic17MinPrecision, 1},
		// Set 24 is blind: written by set24 before the detector ran on it; first run by the lead
		// (floors 0 until then).
		{"testdata/realistic_holdout24.txt", realistic24MinF2, realistic24MinPrecision, 1},
	} {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(tc.file, "testdata/"), ".txt"), func(t *testing.T) {
			if strings.Contains(tc.file, "holdout5") || strings.Contains(tc.file, "holdout6") || strings.Contains(tc.file, "holdout7") || strings.Contains(tc.file, "holdout8") || strings.Contains(tc.file, "holdout17") || strings.Contains(tc.file, "holdout24") {
				old := *showErrors
				*showErrors = 0
				defer func() { *showErrors = old }()
			}
			samples := loadAnnotated(t, tc.file)
			if len(samples) < 40 {
				t.Fatalf("got %d samples; want at least 40", len(samples))
			}
			per, total := evaluate(t, e, samples)
			t.Log(qualityTable("realistic (hand-written) "+tc.file, per, total))
			if f2 := total.f2(); f2 < tc.minF2 {
				t.Errorf("overall F2 = %.3f; want >= %.2f", f2, tc.minF2)
			}
			if p := total.precision(); p < tc.minP {
				t.Errorf("overall precision = %.3f; want >= %.2f", p, tc.minP)
			}
			if r := per[TypeCreditCard].recall(); r < tc.minCardRecall {
				t.Errorf("credit_card recall = %.3f; want >= %.2f", r, tc.minCardRecall)
			}
		})
	}
}

func checkTargets(t *testing.T, per map[string]*typeScore, total typeScore, minF2 float64) {
	t.Helper()
	if f2 := total.f2(); f2 < minF2 {
		t.Errorf("overall F2 = %.3f; want >= %.2f", f2, minF2)
	}
	if p := total.precision(); p < 0.97 {
		t.Errorf("overall precision = %.3f; want >= 0.97", p)
	}
	for _, typ := range []string{TypeCreditCard, TypeSSN} {
		if r := per[typ].recall(); r < 0.99 {
			t.Errorf("%s recall = %.3f; want >= 0.99", typ, r)
		}
	}
}

// Regression guards for TestRealistic (see its comment).
const (
	realisticMinF2         = 0.92 // measured 0.938, later 0.987 (with and without the name rescorer)
	realisticMinPrecision  = 0.94 // measured 0.955, later 0.978
	realistic2MinF2        = 0.92 // first run 0.870 (P 0.883); 0.904 before the rescorer, 0.937 with it (trained on it); 0.964 later
	realistic2MinPrecision = 0.94 // first run 0.883; 0.940 before the rescorer, 0.951 with it
	realistic3MinF2        = 0.86 // first run 0.744; 0.830 before the rescorer, 0.879 with it (trained on it)
	realistic3MinPrecision = 0.94 // first run 0.840; 0.927 before the rescorer, 0.953 with it
	realistic4MinF2        = 0.89 // first run 0.837; 0.847 before the rescorer, 0.909 with it (trained on it)
	realistic4MinPrecision = 0.90 // first run 0.887; 0.889 before the rescorer, 0.918 with it
	realistic5MinF2        = 0.88 // first run 0.778 (P 0.934, R 0.747), 0.783 with the rescorer, 0.794 with layout.go, 0.840 with detect3's rules, 0.851 with detect4's, 0.900 with detect10's (blind)
	realistic5MinPrecision = 0.94 // first run 0.934, 0.934 with the rescorer, 0.935 with layout.go, 0.946 with detect3's rules, 0.953 with detect4's (blind)
	realistic6MinF2        = 0.84 // first run 0.713 (P 0.905, R 0.677); 0.828 with layout.go, 0.837 with detect3's rules, 0.845 with detect4's (errors never printed), 0.854 with detect8's
	realistic6MinPrecision = 0.91 // first run 0.905; 0.920 with layout.go, 0.920 with detect3's rules, 0.922 with detect8's
	realistic7MinF2        = 0.90 // first run 0.839 (P 0.914, R 0.822); 0.862 with detect3's rules (its author's; errors never printed), 0.890 with detect4's, 0.896 with detect7's, 0.917 with detect8's
	realistic7MinPrecision = 0.95 // first run 0.914; 0.940 with detect3's rules, 0.950 with detect4's, 0.959 with detect8's
	realistic8MinF2        = 0.87 // first run 0.838 (P 0.938, R 0.816; detect4, errors never printed); 0.838 with detect4's rules; 0.883 with detect6's script.go (P 0.934; detect6 had seen 6 of its lines); 0.885 with detect7's; 0.888 with detect8's
	realistic8MinPrecision = 0.95 // first run 0.938; 0.938 with detect4's rules; 0.934 with detect6's; 0.948 with detect7's; 0.962 with detect8's; 0.955 with detect10's
	realistic9MinF2        = 0.96 // first run 0.645 (P 0.908, R 0.601); 0.977 with detect6's changes (a study set: its errors were read); 0.983 with detect9's (one name labelled)
	realistic9MinPrecision = 0.96 // first run 0.908; 0.967 with detect6's changes, 0.973 with detect8's
	// Set 10 (set10 helper, written without reading the detector or the other sets' texts; first
	// run by the lead on main 694bd21, errors never printed): P 0.818, R 0.677, F2 0.701;
	// P 0.829, R 0.692, F2 0.715 with detect6's changes (script.go; blind); P 0.852, R 0.737,
	// F2 0.757 with detect7's (phones, role mailboxes, addresses, dates of birth; blind). A study
	// set since 2026-11-25: P 0.935, R 0.812, F2 0.834 with detect8's changes (errors read);
	// P 0.888, R 0.805, F2 0.820 with detect9's alone (scriptrun.go, addrworld.go: addresses
	// 14 of 14); P 0.963, R 0.880, F2 0.895 with both.
	realistic10MinF2        = 0.87
	realistic10MinPrecision = 0.95
	// Set 11 (detect7's study set: phones, addresses, role mailboxes and dates of birth of 36
	// countries): first run 0.641 / 0.540 / 0.558 (P / R / F2); 0.930 / 0.874 / 0.884 with
	// detect7's changes (its errors were read).
	// 0.951 / 0.879 / 0.892 with detect8's (names only); 0.968 / 0.929 / 0.937 with detect9's
	// alone (addresses, non-Latin names); 0.979 / 0.934 / 0.943 with both.
	realistic11MinF2        = 0.92
	realistic11MinPrecision = 0.96
	// Set 12 (set12 helper, written without reading the detector or the other sets' texts;
	// first run by the lead on main 2026-11-25, errors never printed): P 0.852, R 0.557, F2
	// 0.598 (person 380 of 557 spans: P 0.796, R 0.432); P 0.870, R 0.603, F2 0.643 with
	// detect8's (person P 0.833, R 0.500; still blind: detect8 never read it); P 0.882, R 0.628,
	// F2 0.667 with detect11's phones (phone 57 of 64, 0 FP, was 45 / 1 FP; blind, one run);
	// 0.674 (P 0.866) with detect10's list evidence alone; P 0.872, R 0.661, F2 0.694 with both
	// merged (lead, blind, totals only). A study set since 2026-11-25 03:20 UTC (its errors are
	// read), with set 17 written blind to replace it. P 0.903, R 0.698, F2 0.731 with detect13's
	// titles, notation and running-text cues alone (person P 0.874, R 0.603; errors read).
	// P 0.882, R 0.709, F2 0.738 with detect14's scriptshape.go and namefamily.go alone
	// (non-Latin and romanised family-first names; errors read).
	realistic12MinF2        = 0.68
	realistic12MinPrecision = 0.86
	// Set 13 (detect8's study set: cue-less names in running text of new kinds, look-alike
	// negatives; written before the detector ran on it): first run P 0.845, R 0.701, F2 0.726;
	// 0.954 / 0.880 / 0.894 with detect8's changes (its errors were read); 0.955 / 0.906 /
	// 0.915 with detect13's.
	realistic13MinF2        = 0.88
	realistic13MinPrecision = 0.94
	// Set 14 (detect9's study set: names in CJK, Korean, Thai, Arabic, Hebrew and Cyrillic
	// without honorifics, addresses of TH/MX/AR/CO/CL/IN/ID/VN/KR/JP/CN/SA/EG/IL): first run
	// 0.625 / 0.238 / 0.272 (P / R / F2); 0.959 / 0.886 / 0.899 with detect9's changes (its
	// errors were read); 0.969 / 0.905 / 0.917 with detect8's merged too.
	realistic14MinF2        = 0.90
	realistic14MinPrecision = 0.95
	// Set 15 (detect10's study set: names known from the structure of lists, rosters, results,
	// team sheets, rows and tables; look-alike negatives; written before the detector ran on
	// it): first run P 0.848, R 0.311, F2 0.356; 0.976 / 0.667 / 0.712 with namelist.go (its
	// errors were read); 0.977 / 0.711 / 0.752 with detect13's (cricket notation).
	realistic15MinF2        = 0.70
	realistic15MinPrecision = 0.96
	// Set 16 (detect11's study set: phone numbers of 33 countries in national formats, extension
	// words, non-ASCII digits and spaces, look-alike identifiers; written before the detector
	// ran on it): first run P 0.975, R 0.583, F2 0.634 (phone 40 of 87, 2 FP); 1.000 / 0.924 /
	// 0.938 with detect11's changes (phone 85 of 87, 0 FP; its errors were read).
	realistic16MinF2        = 0.92
	realistic16MinPrecision = 0.97
	// Set 18 (detect12's study set: names known from the structure of exports, columns, rows and
	// lists: CSV/TSV with and without header, LDIF, vCard, iCalendar, key: value and YAML
	// records, rotas, results, first list items; look-alike attribute names, headers, codes,
	// teams, places, products, boats; written before the detector ran on it): first run
	// P 0.797, R 0.761, F2 0.768; 0.949 / 0.939 / 0.941 with detect12's structure.go (its errors
	// were read); 0.949 / 0.933 / 0.936 merged with detect13's and detect14's work.
	realistic18MinF2        = 0.92
	realistic18MinPrecision = 0.93
	// Set 19 (detect13's study set: names in running text: sports notation and reports,
	// bulletins, minutes, announcements with titles and honorifics of many languages, bare
	// later mentions; look-alikes named after people; written before the detector ran on it):
	// first run P 0.809, R 0.548, F2 0.586 (239 person spans, 31 FP); 0.975 / 0.820 / 0.847
	// with detect13's changes (nametitles.go, namesport.go; its errors were read).
	realistic19MinF2        = 0.82
	realistic19MinPrecision = 0.95
	// Set 20 (detect14's study set: names in Georgian, Armenian, Greek, Ethiopic, Arabic,
	// Persian, Urdu, Hindi, Chinese and Korean, romanised family-first names, look-alike places,
	// streets and organisations; written before the detector ran on it): first run P 0.877,
	// R 0.270, F2 0.314 (0.912 / 0.278 / 0.323 after two omitted labels were added); 0.987 /
	// 0.834 / 0.861 with scriptshape.go and namefamily.go (its errors were read); 0.988 / 0.838 /
	// 0.864 once four dates of birth under a "Ngày sinh" column were labelled (ids17's merge).
	realistic20MinF2        = 0.84
	realistic20MinPrecision = 0.97
	// Set 21 (addr12's study set: street addresses of 24 countries, e-mails of people and of
	// roles, phones after short cue words; look-alike negatives; written before the detector
	// ran on it): first run P 0.692, R 0.683, F2 0.685 (street_address 17 of 48, 18 FP; e-mail 8
	// FP, all role mailboxes; phone 24 of 30); 0.866 / 0.890 / 0.885 with addr12's changes
	// (street_address 43 of 48, 5 FP; e-mail 2 FP; phone 28 of 30, 0 FP; its errors were read);
	// 0.884 / 0.890 / 0.888 with detect12-14's work merged.
	realistic21MinF2        = 0.86
	realistic21MinPrecision = 0.85
	// Set 23 (neg17's study set: things named like people: registered animals, ships and
	// ferries, storms, films, songs, books, furniture and products, streets and stops, schools,
	// halls, cups, memorials, prizes, firms, taxa; with their owners, breeders, skippers and
	// directors; written before the detector ran on it): first run P 0.427, R 0.697, F2 0.619
	// (76 person spans, 70 FP); 0.476 / 0.776 / 0.689 once seven titles were moved out of the
	// spans the author had labelled against the convention; 0.711 / 0.776 / 0.762 with
	// namething.go (the words around a name that make it a thing; its errors were read);
	// 0.738 / 0.776 / 0.768 with noble titles and racing suffixes; 0.756 / 0.776 / 0.772 with
	// keepers ("X's owner", "X, ridden by Y"); 0.759 / 0.789 / 0.783 with herbarium cues
	// (Leg., Det.) after merging main.
	realistic23MinF2        = 0.77
	realistic23MinPrecision = 0.74
	// Set 17 (set17's blind set, errors never printed; its author never ran the detector on
	// it): first run by the lead on main f9cf645, P 0.796, R 0.547, F2 0.584 (person P 0.745,
	// R 0.459; credit_card 10 of 14, ssn 5 of 8, date_of_birth 9 of 21). With detect13's
	// changes 0.598, detect14's 0.623, detect12's 0.634, addr12's 0.653, ids17's 0.670 (ssn 8
	// of 8, date_of_birth 20 of 21; ids17 was told these per-type totals and the author's
	// description of the formats, never the texts). The lead then read its four card misses
	// (one settlement slip: cards after a time column); the fix (columnGap, card.go) made them
	// 14 of 14, so the card figure is no longer blind: P 0.827, R 0.645, F2 0.675. With neg17's
	// 0.834 / 0.645 / 0.676 (neg17 was told the person precision and the author's list of
	// negative kinds).
	realistic17MinF2        = 0.66
	realistic17MinPrecision = 0.82
	// Set 24 (curling, bridge, rescue and visitor logs, condolence and liner notes, package and
	// build metadata, logcat/Samba/IRC/VTT/Telegram/Trello/HubSpot/Stripe/Shopify exports, forms
	// and lists in about 18 languages, 64 texts, 485 spans) was written by set24, who never ran the detector on it:
	// first run by the lead on main f49532d (the session's final detector; nobody has tuned on
	// it): P 0.917, R 0.726, F2 0.757 (person P 0.892, R 0.611; credit_card 15 of 15, ssn 5 of
	// 5). Errors never printed.
	realistic24MinF2        = 0.74
	realistic24MinPrecision = 0.90
)

// loadAnnotated reads records "=== id" whose text marks entities as [[type:value]].
func loadAnnotated(t testing.TB, path string) []corpusSample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusSample
	var id string
	var body []string
	flush := func() {
		if id == "" {
			return
		}
		s := corpusSample{ID: id}
		raw := strings.TrimRight(strings.Join(body, "\n"), "\n")
		var text strings.Builder
		for {
			i := strings.Index(raw, "[[")
			if i < 0 {
				text.WriteString(raw)
				break
			}
			j := strings.Index(raw[i:], "]]")
			k := strings.IndexByte(raw[i:], ':')
			if j < 0 || k < 0 || k > j {
				t.Fatalf("%s: bad mark-up near %q", id, raw[i:min(len(raw), i+40)])
			}
			text.WriteString(raw[:i])
			typ, val := raw[i+2:i+k], raw[i+k+1:i+j]
			start := text.Len()
			text.WriteString(val)
			s.Spans = append(s.Spans, struct {
				Type  string `json:"type"`
				Start int    `json:"start"`
				End   int    `json:"end"`
			}{typ, start, text.Len()})
			raw = raw[i+j+2:]
		}
		s.Text = text.String()
		out = append(out, s)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "=== "); ok {
			flush()
			id, body = strings.TrimSpace(rest), nil
			continue
		}
		if id == "" {
			continue // header comments
		}
		body = append(body, line)
	}
	flush()
	return out
}

// TestNoPlaceAsPerson checks that place, product and organisation names that contain or look
// like personal names are not taken for people.
func TestNoPlaceAsPerson(t *testing.T) {
	e := newEngine(t, Options{})
	for _, text := range []string{
		"The Lincoln Park branch opens at 9.",
		"Victoria Station is closed for works.",
		"We met at Jackson Heights station.",
		"Johns Hopkins Hospital called back.",
		"Morgan Stanley wants a demo.",
		"Park the Ford Transit van outside.",
		"Deploy Grafana Loki 3.1 next week.",
		"Flights to Kuala Lumpur and Addis Ababa are delayed.",
		"The Santa Monica Pier pictures are great.",
		"Mount Kilimanjaro poster, 12.00",
		"Lake Tahoe and Walnut Creek are on the list.",
		"The Hilton Garden Inn has rooms.",
		"Saint Petersburg office",
		"The Golden Gate Bridge is open.",
		"Tesla Model Y and Toyota Corolla are in the fleet.",
		"The Kennedy Center show was sold out.",
		"Charlotte Douglas Airport is busy.",
		"The Austin office moved.",
		"Jordan Valley Farms sells eggs.",
		"The Madison Square Garden show starts at 8.",
		"Apache Kafka and Visual Studio Code need updates.",
		"The Washington Monument is closed.",
		"Florence Cathedral was stunning.",
		"We visited the Lincoln Memorial.",
		"Victoria Falls trip booked.",
		"Morgan Hill and Salt Lake City next.",
		"The Paris Hilton ballroom is booked.",
		"Buenos Aires and Rio de Janeiro flights.",
		"Mercedes-Benz Sprinter fleet tablets",
		"Goldman Sachs lobby",
		// things named after people (name.go: possessive + business noun, animals, titled
		// runs before a place noun)
		"Dinner at Rosa Delgado's Kitchen tonight.",
		"Lunch at Chef Amir Haddad's Mezze Grill, then coffee.",
		"Our beagle Winston ate a sock, and my other dog Lady Penelope ignored it.",
		"Patient: Biscuit (Labrador, 6 yrs) is due for boosters.",
		"The ship Queen Adelaide docks at 10.",
		"Evensong is in the Lady Eleanor Hall chapel on Sunday.",
		"Apply for the Ada Lovelace scholarship and the Rhodes fund.",
	} {
		for _, x := range e.Scan(text) {
			if x.Type == TypePerson {
				t.Errorf("%q: %q taken for a person (%.2f)", text, x.Text, x.Score)
			}
		}
	}
}

// Set 22 (ids17's study set: cards of every network and layout, SSNs in all forms, dates of
// birth of many languages and layouts, look-alike negatives; written before the detector ran
// on it): first run P 0.932, R 0.704, F2 0.740 (card 38 of 44, SSN 19 of 27, date of birth
// 28 of 55; 0 false alarms for the three); 0.946 / 0.898 / 0.907 with ids17's changes (card
// 44 of 44, SSN 26 of 27, date of birth 53 of 55, still 0 false alarms; its errors were read);
// 0.947 / 0.913 / 0.920 after merging detect12's and detect14's work.
const (
	realistic22MinF2        = 0.89
	realistic22MinPrecision = 0.93
)
