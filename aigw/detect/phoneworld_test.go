package detect

import (
	"testing"
)

// TestWorldPhones covers the mechanisms of phonenorm.go and phoneplaces.go and the extension,
// separator and column rules of phone.go (made-up numbers valid for their country) and, for
// each, a look-alike that must stay no phone.
func TestWorldPhones(t *testing.T) {
	e := newEngine(t, Options{Types: []string{TypePhone}})
	checkScans(t, e, []scanCase{
		{"full-width digits", "電話番号：０９０－１２３４－５６７８\n", []string{"phone:０９０－１２３４－５６７８"}},
		{"arabic-indic digits", "أو الجوال ٠٥٠ ١٢٣ ٤٥٦٧ في دبي", []string{"phone:٠٥٠ ١٢٣ ٤٥٦٧"}},
		{"persian digits and letters", "شماره جدید: ۰۹۱۲ ۳۴۵ ۶۷۸۹", []string{"phone:۰۹۱۲ ۳۴۵ ۶۷۸۹"}},
		{"no-break spaces", "Appelez le 06\u00a012\u00a034\u00a056\u00a078 à Paris", []string{"phone:06\u00a012\u00a034\u00a056\u00a078"}},
		{"thin spaces keep offsets", "tél. 01\u202f42\u202f68\u202f53\u202f00, merci", []string{"phone:01\u202f42\u202f68\u202f53\u202f00"}},
		{"georgian script", "ტელ: 555 12 34 56", []string{"phone:555 12 34 56"}},
		{"armenian script", "Հեռ․՝ 077 123456 կամ", []string{"phone:077 123456"}},
		{"ethiopic script", "እባክዎ በ 0911 23 45 67 ይደውሉ", []string{"phone:0911 23 45 67"}},
		{"urdu letters and city", "رابطہ: 0300 1234567 لاہور", []string{"phone:0300 1234567"}},
		{"city", "The Cork office: Siobhán 087 123 4567", []string{"phone:087 123 4567"}},
		{"city spanish mobile", "Santiago. Mi celular es el 9 8765 4321 y", []string{"phone:9 8765 4321"}},
		{"language words", "sige. globe ko is 0927 455 1020 or smart", []string{"phone:0927 455 1020"}},
		{"currency", "Harga baharu RM 45.90, sila hubungi 03-7955 1234", []string{"phone:03-7955 1234"}},
		{"two groups of four after a phone word", "pls call 9123 4567 tmr", []string{"phone:9123 4567"}},
		{"area code slash", "Fax 030 / 12345679\n", []string{"phone:030 / 12345679"}},
		{"two numbers slash", "ტელ: 555 12 34 56 / 032 224 11 22", []string{"phone:555 12 34 56", "phone:032 224 11 22"}},
		{"extension local", "please call (02) 8921 4455 local 102 from 8", []string{"phone:(02) 8921 4455 local 102"}},
		{"extension fen ji", "電話：(02) 2345-6789 分機 215\n", []string{"phone:(02) 2345-6789 分機 215"}},
		{"phone column", "name,phone,postcode\nHarriet Cole,020 7946 0321,SW1A 2AA", []string{"phone:020 7946 0321"}},
		{"callback", "Jarrah rang, wants a callback on 0412 345 678", []string{"phone:0412 345 678"}},
		{"mpesa", "pls send the mpesa to 0712 345678 b4 5", []string{"phone:0712 345678"}},
		{"portuguese words", "Obrigado! Pode confirmar?\nCliente: meu 71 98812-3344", []string{"phone:71 98812-3344"}},
		{"trunk mobile run", "Ksh1,250.00 imetumwa kwa JOSEPH MWANGI 0722483119 tarehe", []string{"phone:0722483119"}},
		{"country code without plus", "Umepokea Ksh3,000.00 kutoka kwa AKINYI ODERO 254733590214 tarehe", []string{"phone:254733590214"}},
		// look-alikes
		{"country code run that is no mobile", "Ksh 300 at till 254201234567 tarehe", nil},
		{"trunk run in an id column", "+61 2 9374 4000\nid|name\n0437531724|Chiamaka Desta", []string{"phone:+61 2 9374 4000"}},
		{"trunk run that is no mobile", "Ksh 450 paid at till 0201234567 thanks", nil},
		{"invoice year serial", "Helsinki\nLaskun numero 2024-1187, eräpäivä", nil},
		{"contact header is no phone column", "Emergency contact: Ana, +91 81234 53876\ncustomer_id,full_name\n8224781729,Dewi", []string{"phone:+91 81234 53876"}},
		{"arabic-indic order number", "رقم الطلب ٧٧٨١٢٠٣ في دبي", nil},
		{"eight digits without a phone word", "Blk 221, ref 9123 4567 tmr", nil},
		{"document number word", "Santiago, RUT 12.345.678-5, folio 9 8765 4321", nil},
		{"aadhaar", "Mumbai\nAadhaar No.: 2345 6789 0124\n", nil},
	})
}

// TestPhoneNormOnlyWhenNeeded checks that text whose only non-ASCII spaces are away from digit
// groups is scanned without the normalised copy (no allocation for it).
func TestPhoneNormOnlyWhenNeeded(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Prix\u00a0: 45\u00a0€", false},
		{"tél. 01\u00a042 68 53 00", true},
		{"電話 ０９０", true},
		{"رقم ٧٧٨", true},
		{"plain 0123 456 789", false},
	} {
		if got := needsPhoneNorm(tc.text); got != tc.want {
			t.Errorf("needsPhoneNorm(%q) = %v; want %v", tc.text, got, tc.want)
		}
	}
}
