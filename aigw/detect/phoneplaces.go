package detect

import "strings"

// More evidence of a text's country for national phone numbers (phoneregion.go): the names of
// its larger cities (as written in English and in the country's own script), words of its
// national institutions ("Eircode", "Aadhaar", "Barangay"), and function words of languages
// spoken in one or two countries. Like the rest of phoneHints, they only choose which numbering
// plans libphonenumber is asked about; a number must still be valid for one of them.

// placeRegions are matched case-sensitively, at word bounds for Latin letters. Names shared by
// several countries' big cities are left out ("Kingston", "Perth", "Córdoba").
var placeRegions = [...]struct{ name, region string }{
	{"Lagos", "NG"}, {"Abuja", "NG"}, {"Ibadan", "NG"}, {"Port Harcourt", "NG"}, {"Enugu", "NG"}, {"Kano", "NG"},
	{"Mumbai", "IN"}, {"Delhi", "IN"}, {"Bengaluru", "IN"}, {"Bangalore", "IN"}, {"Chennai", "IN"},
	{"Kolkata", "IN"}, {"Hyderabad", "IN"}, {"Pune", "IN"}, {"Kochi", "IN"}, {"Ahmedabad", "IN"},
	{"Jaipur", "IN"}, {"Aadhaar", "IN"}, {"मुंबई", "IN"}, {"दिल्ली", "IN"},
	{"Manila", "PH"}, {"Quezon City", "PH"}, {"Makati", "PH"}, {"Cebu", "PH"}, {"Davao", "PH"},
	{"Pasig", "PH"}, {"Taguig", "PH"}, {"Barangay", "PH"},
	{"Jakarta", "ID"}, {"Surabaya", "ID"}, {"Bandung", "ID"}, {"Medan", "ID"}, {"Yogyakarta", "ID"},
	{"Denpasar", "ID"}, {"NIK", "ID"}, {"Kuala Lumpur", "MY"}, {"Petaling Jaya", "MY"}, {"Johor Bahru", "MY"},
	{"Penang", "MY"}, {"Shah Alam", "MY"}, {"Ipoh", "MY"}, {"Singapore", "SG"}, {"HDB", "SG"},
	{"NRIC", "SG"}, {"Dublin", "IE"}, {"Cork", "IE"}, {"Galway", "IE"}, {"Limerick", "IE"},
	{"Eircode", "IE"}, {"Santiago", "CL"}, {"Valparaíso", "CL"}, {"Lima", "PE"}, {"Arequipa", "PE"},
	{"Cusco", "PE"}, {"Tbilisi", "GE"}, {"Batumi", "GE"}, {"თბილისი", "GE"}, {"Yerevan", "AM"},
	{"Երևան", "AM"}, {"Addis Ababa", "ET"}, {"አዲስ አበባ", "ET"}, {"Tehran", "IR"}, {"Isfahan", "IR"},
	{"Shiraz", "IR"}, {"تهران", "IR"}, {"Seoul", "KR"}, {"Busan", "KR"}, {"Athens", "GR"},
	{"Thessaloniki", "GR"}, {"Bucharest", "RO"}, {"București", "RO"}, {"Cluj-Napoca", "RO"},
	{"Prague", "CZ"}, {"Praha", "CZ"}, {"Brno", "CZ"}, {"Ostrava", "CZ"}, {"Helsinki", "FI"},
	{"Espoo", "FI"}, {"Tampere", "FI"}, {"Turku", "FI"}, {"Oulu", "FI"}, {"Berlin", "DE"},
	{"Hamburg", "DE"}, {"München", "DE"}, {"Munich", "DE"}, {"Köln", "DE"}, {"Frankfurt", "DE"},
	{"Stuttgart", "DE"}, {"Düsseldorf", "DE"}, {"Amsterdam", "NL"}, {"Rotterdam", "NL"},
	{"Utrecht", "NL"}, {"Den Haag", "NL"}, {"Eindhoven", "NL"}, {"Milano", "IT"}, {"Milan", "IT"},
	{"Roma", "IT"}, {"Napoli", "IT"}, {"Torino", "IT"}, {"Firenze", "IT"}, {"Bologna", "IT"},
	{"Madrid", "ES"}, {"Barcelona", "ES"}, {"Sevilla", "ES"}, {"Bilbao", "ES"}, {"Málaga", "ES"},
	{"Zaragoza", "ES"}, {"Dakar", "SN"}, {"Thiès", "SN"}, {"北京", "CN"}, {"上海", "CN"}, {"广州", "CN"},
	{"深圳", "CN"}, {"Beijing", "CN"}, {"Shanghai", "CN"}, {"台北", "TW"}, {"臺北", "TW"}, {"高雄", "TW"},
	{"台中", "TW"}, {"新北", "TW"}, {"Taipei", "TW"}, {"香港", "HK"}, {"Hong Kong", "HK"},
	{"Kowloon", "HK"}, {"Dubai", "AE"}, {"Abu Dhabi", "AE"}, {"Sharjah", "AE"}, {"دبي", "AE"},
	{"أبوظبي", "AE"}, {"Lahore", "PK"}, {"Karachi", "PK"}, {"Islamabad", "PK"}, {"لاہور", "PK"},
	{"کراچی", "PK"}, {"London", "GB"}, {"Edinburgh", "GB"}, {"Glasgow", "GB"}, {"Manchester", "GB"},
	{"Birmingham", "GB"}, {"Leeds", "GB"}, {"Liverpool", "GB"}, {"Aberdeen", "GB"}, {"Cardiff", "GB"},
	{"Belfast", "GB"}, {"Cairo", "EG"}, {"القاهرة", "EG"}, {"الإسكندرية", "EG"}, {"東京", "JP"},
	{"大阪", "JP"}, {"Tokyo", "JP"}, {"Osaka", "JP"}, {"Riyadh", "SA"}, {"Jeddah", "SA"},
	{"الرياض", "SA"}, {"Nairobi", "KE"}, {"Mombasa", "KE"}, {"Johannesburg", "ZA"},
	{"Cape Town", "ZA"}, {"Durban", "ZA"}, {"Pretoria", "ZA"}, {"Istanbul", "TR"}, {"İstanbul", "TR"},
	{"Ankara", "TR"}, {"São Paulo", "BR"}, {"Rio de Janeiro", "BR"}, {"Guadalajara", "MX"},
	{"Monterrey", "MX"}, {"Buenos Aires", "AR"}, {"Bogotá", "CO"}, {"Medellín", "CO"},
	{"Sydney", "AU"}, {"Melbourne", "AU"}, {"Brisbane", "AU"}, {"Warszawa", "PL"}, {"Kraków", "PL"},
	{"Budapest", "HU"}, {"Lisboa", "PT"}, {"Paris", "FR"}, {"Lyon", "FR"}, {"Marseille", "FR"},
	{"Bruxelles", "BE"}, {"Antwerpen", "BE"}, {"Zürich", "CH"}, {"Genève", "CH"}, {"Wien", "AT"},
	{"Stockholm", "SE"}, {"Göteborg", "SE"}, {"Oslo", "NO"}, {"København", "DK"}, {"Bangkok", "TH"},
	{"Hanoi", "VN"}, {"Hà Nội", "VN"},
}

// languageWords are function words of languages spoken in one or two numbering plans; two
// different ones near a number name its language (one could be a loan word or a name).
var languageWords = map[string]uint8{
	// Tagalog
	"ang": langTL, "ng": langTL, "mga": langTL, "po": langTL, "ako": langTL, "ko": langTL,
	"salamat": langTL, "naman": langTL, "sige": langTL, "lang": langTL, "sa": langTL, "na": langTL,
	// Malay (and Indonesian: shared words count for both)
	"sila": langMS, "pejabat": langMS, "baharu": langMS, "pertanyaan": langMS | langID,
	"hubungi": langMS | langID, "atau": langMS | langID, "untuk": langMS | langID,
	"kami": langMS | langID, "anda": langMS | langID, "dengan": langMS | langID,
	"yang": langMS | langID, "akan": langMS | langID, "ada": langMS | langID,
	// Indonesian
	"sudah": langID, "kalau": langID, "kak": langID, "silakan": langID, "nomor": langID,
	"rumah": langMS | langID, "ya": langID,
	// Finnish
	"ja": langFI, "tai": langFI, "toimisto": langFI, "puh": langFI, "klo": langFI, "osoite": langFI,
	// Dutch
	"het": langNL, "een": langNL, "ik": langNL, "niet": langNL, "bij": langNL, "mijn": langNL,
	"naar": langNL, "maar": langNL, "zijn": langNL, "voor": langNL | langIT,
	// Italian
	"il": langIT, "della": langIT, "per": langIT, "con": langIT, "saluti": langIT, "sono": langIT,
	"cordiali": langIT, "ufficio": langIT,
	// Portuguese
	"obrigado": langPT, "obrigada": langPT, "pode": langPT, "meu": langPT, "minha": langPT,
	"pelo": langPT, "falar": langPT, "caso": langPT, "em": langPT, "você": langPT, "não": langPT,
	"ou": langPT, "tudo": langPT, "olá": langPT,
}

const (
	langTL uint8 = 1 << iota
	langMS
	langID
	langFI
	langNL
	langIT
	langPT
)

var languageRegions = [...]struct {
	lang   uint8
	region string
}{{langTL, "PH"}, {langMS, "MY"}, {langID, "ID"}, {langFI, "FI"}, {langNL, "NL"}, {langIT, "IT"}, {langPT, "BR"}, {langPT, "PT"}}

// addPlaces adds the regions of the places and institutions named in text.
func (h *phoneHints) addPlaces(text string) {
	for _, p := range placeRegions {
		for off := 0; off < len(text); {
			k := strings.Index(text[off:], p.name)
			if k < 0 {
				break
			}
			k += off
			e := k + len(p.name)
			if (k == 0 || !isAlpha(text[k-1])) && (e == len(text) || !isAlpha(text[e])) {
				h.add(p.region)
				break
			}
			off = e
		}
	}
}

// addLanguages adds the regions of a language two of whose function words occur in text.
func (h *phoneHints) addLanguages(text string) {
	var seen [len(languageRegions)]int8
	var first [len(languageRegions)][8]byte // the first word seen per language, to count distinct
	var buf [16]byte
	for i := 0; i < len(text); {
		if !isAlpha(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isAlpha(text[j]) {
			j++
		}
		if j-i > len(buf) || j < len(text) && text[j] >= 0x80 || i > 0 && text[i-1] >= 0x80 {
			i = j
			continue
		}
		lw, _ := lowerInto(buf[:0:len(buf)], text[i:j]) // ASCII letters that fit buf
		i = j
		langs, ok := languageWords[string(lw)]
		if !ok {
			continue
		}
		for x, l := range languageRegions {
			if langs&l.lang == 0 || seen[x] >= 2 {
				continue
			}
			var w [8]byte
			copy(w[:], lw)
			if seen[x] == 1 && w == first[x] {
				continue
			}
			if seen[x] == 0 {
				first[x] = w
			}
			seen[x]++
		}
	}
	for x, l := range languageRegions {
		if seen[x] >= 2 {
			h.add(l.region)
		}
	}
}
