package detect

import (
	"strings"
	"unicode/utf8"
)

// Address shapes of countries whose addresses the layouts of address.go do not reach: a chain
// of district parts ending with a postal code (Mexican "Col. Roma Norte, C.P. 06700", Indian
// "Sector 21, Dwarka, New Delhi 110075", "Bengaluru, PIN 560009", Argentine CPA "C1428AAQ"),
// Indian unit-first addresses ("Flat 302, Plot 14, ...", "H.No. 5-9-22, ..."), Colombian
// "Calle 45 # 12-34", Thai "55/3 Moo 2" and "18 Soi Ari 4", Indonesian "RT 03/RW 05", a street
// before a Vietnamese ward ("120 Nguyễn Trãi, Phường 2"), and addresses written in Japanese
// (without 〒), Chinese, Korean, Thai, Arabic and Hebrew. Every shape needs evidence that
// ordinary text lacks: a postal code at the end of the chain, a closed list of provinces and
// prefectures at the start, or a district word of the country.

// addrWorldParts is the most parts a district chain may have before its postal code.
const addrWorldParts = 6

// districtWords introduce a district part in a chain; after them a street before the chain
// needs no postal code ("120 Nguyễn Trãi, Phường 2, Quận 5").
var districtWords = map[string]bool{"Phường": true, "Quận": true, "Huyện": true, "Xã": true,
	"P.": true, "Q.": true, "Col.": true, "Colonia": true, "Kel.": true, "Kec.": true,
	"Kelurahan": true, "Kecamatan": true, "Tambon": true, "Amphoe": true, "Khet": true,
	"Khwaeng": true, "Moo": true, "Sector": true, "Fracc.": true, "Barrio": true}

// localityAfter returns the end of a locality that carries a postal code or a state after the
// street ending at e, or -1: the layouts of address.go first, then a district chain, a
// locality on the next line of a letter's address block, and a stray space before the comma
// ("PO Box 8810 , Harrisburg PA 17105-8810").
func localityAfter(text string, e int) int {
	if le := localityStd(text, e); le > 0 {
		return le
	}
	if e+2 < len(text) && text[e] == ' ' && text[e+1] == ',' {
		if le := localityStd(text, e+1); le > 0 {
			return le
		}
		return worldLocality(text, e+1, false)
	}
	if e < len(text) && text[e] == '\n' {
		if le := nextLineLocality(text, e+1); le > 0 {
			return le
		}
	}
	if le := worldLocality(text, e, false); le > 0 {
		return le
	}
	return blockLocality(text, e)
}

// nextLineLocality returns the end of "City, ST 12345" when it is the whole line at s; also
// "City, BC V6G 1M8" (Canada), "Preston VIC 3072" (Australia) and "OAKLAND CA 94601" (capitals,
// the comma left out).
func nextLineLocality(text string, s int) int {
	j, n := s, 0
	for n < 3 && j < len(text) && isLetterAt(text, j) {
		we := wordEnd(text, j)
		if w := text[j:we]; !isCapWord(w) && !allCaps(w) {
			return -1
		}
		j, n = we, n+1
		t := space(text, j)
		if t < 0 || !isUpper(text[t]) {
			break
		}
		if se := stateAt(text, t); se > 0 && space(text, se) > 0 {
			break // the state, without a comma before it
		}
		j = t
	}
	if n == 0 || j >= len(text) || text[j] != ',' && text[j] != ' ' {
		return -1
	}
	k := j
	if text[k] == ',' {
		k++
	}
	k = space(text, k)
	if k < 0 {
		return -1
	}
	se := stateAt(text, k)
	if se < 0 || space(text, se) < 0 {
		return -1
	}
	ze := zipAt(text, se+1)
	if ze < 0 {
		ze = postcodeAt(text, se+1) // Canada
	}
	if ze < 0 {
		if d := digitsAt(text, se+1); d-se-1 == 4 {
			ze = d // Australia
		}
	}
	if ze < 0 || ze < len(text) && text[ze] != '\n' && text[ze] != '\r' {
		return -1
	}
	return ze
}

// worldLocality returns the end of a chain of district and locality parts after e, each after
// ", " (or " - " before a postal code), that ends with a postal code, or -1. A bare five-digit
// code, which could be any number, counts only after a district word ("Col.", "Kel.",
// "Tambon") or when strong (the street had a shape of its own: "18 Soi Ari 4").
func worldLocality(text string, e int, strong bool) int {
	k := e
	for n := 0; n < addrWorldParts; n++ {
		var j int
		switch {
		case strings.HasPrefix(text[k:], ", "):
			j = k + 2
		case strings.HasPrefix(text[k:], " - ") && n > 0:
			j = k + 3
			if pe := worldPostcode(text, j, true); pe > 0 {
				return pe
			}
			return -1
		default:
			return -1
		}
		if pe := worldPostcode(text, j, n > 0 && strong); pe > 0 {
			return afterPostcode(text, pe)
		}
		pe := worldPart(text, j)
		if pe < 0 {
			return -1
		}
		if we := wordEnd(text, j); we < len(text) && text[we] == '.' && districtWords[text[j:we+1]] || districtWords[text[j:we]] {
			strong = true
		}
		if pe+1 < len(text) && text[pe] == ' ' {
			if ce := worldPostcode(text, pe+1, strong); ce > 0 {
				return afterPostcode(text, ce)
			}
			if ce := fourDigitEnd(text, pe+1); ce > 0 && n > 0 && isLetterAt(text, pe-1) && !numberedWordBefore(text, pe) {
				return ce // "Dhanmondi, Dhaka 1209.", "Brgy. Talon Dos, Las Piñas City 1747"
			}
		}
		k = pe
	}
	return -1
}

// worldStreetEnd reports whether a district part follows the street ending at e: then the
// street is an address without a postal code ("120 Nguyễn Trãi, Phường 2, Quận 5").
func worldStreetEnd(text string, e int) bool {
	if !strings.HasPrefix(text[e:], ", ") {
		return false
	}
	j := e + 2
	if j >= len(text) || !isLetterAt(text, j) {
		return false
	}
	we := wordEnd(text, j)
	if we < len(text) && text[we] == '.' {
		we++
	}
	return districtWords[text[j:we]]
}

// postcodeMarkers introduce a postal code.
var postcodeMarkers = []string{"C.P. ", "C.P.", "CP ", "PIN ", "PIN: ", "PIN- ", "PIN-", "Pin ", "Pincode ",
	"Pin code ", "PIN code ", "Kode Pos ", "CPA "}

// worldPostcode returns the end of a postal code at j: after a marker 4-6 digits, else an
// Argentine CPA ("C1428AAQ", "C1425"), six digits or, when bare is true, five; or -1.
func worldPostcode(text string, j int, bare bool) int {
	marked := false
	for _, m := range postcodeMarkers {
		if strings.HasPrefix(text[j:], m) {
			j += len(m)
			marked = true
			break
		}
	}
	if j >= len(text) {
		return -1
	}
	if isUpper(text[j]) && j+5 <= len(text) && digitsAt(text, j+1) == j+5 {
		e := j + 5
		if e+3 <= len(text) && isUpper(text[e]) && isUpper(text[e+1]) && isUpper(text[e+2]) {
			e += 3
		}
		if e < len(text) && isWordByte(text[e]) {
			return -1
		}
		return e
	}
	d := digitsAt(text, j)
	n := d - j
	if !numRightOK(text, d) || d < len(text) && (isLetterAt(text, d) || text[d] == '-') {
		return -1
	}
	if marked && n >= 4 && n <= 6 || n == 6 || bare && n == 5 {
		return d
	}
	return -1
}

// afterPostcode extends a postal code ending at pe with the one locality or state right after
// it: " Ciudad de México", " CABA", ", CDMX".
func afterPostcode(text string, pe int) int {
	if pc := postalCity(text, pe); pc > 0 {
		pe = pc // and a state code after the city: "03940 Ciudad de México, CDMX"
		if !strings.HasPrefix(text[pe:], ", ") {
			return pe
		}
	}
	k := pe
	if strings.HasPrefix(text[k:], ", ") {
		k++
	}
	if s := space(text, k); s > 0 {
		if r := upperRun(text, s); r-s >= 2 && r-s <= 5 && (r == len(text) || !isWordByte(text[r])) {
			return r
		}
	}
	return pe
}

// worldPart returns the end of one part of a district chain at j: up to six words, each a
// capitalised word, an all-capital code of up to five letters, a district abbreviation
// ("Col.", "Kel."), a particle, a number of up to three digits ("Sector 21", "Quận 1") or an
// ordinal ("4th Cross"); or -1.
func worldPart(text string, j int) int {
	end, letters := -1, false
	for n := 0; n < 6 && j < len(text); n++ {
		var we int
		switch {
		case isDigit(text[j]):
			if oe := ordinalAt(text, j); oe > 0 {
				we = oe
			} else {
				we = digitsAt(text, j)
				if we-j > 3 {
					return end
				}
				if we+1 < len(text) && text[we] == '/' && isDigit(text[we+1]) {
					we = digitsAt(text, we+1)
				} else if we+2 < len(text) && text[we] == '/' && isUpper(text[we+1]) && !isWordByte(text[we+2]) {
					we += 2 // "Road 11/A"
				}
				if we < len(text) && isWordByte(text[we]) {
					return end
				}
			}
		case isLetterAt(text, j) && sectorCode(text, j) > 0:
			we = sectorCode(text, j) // "F-7/3", "G-11/2"
			letters = true
		case isLetterAt(text, j):
			we = wordEnd(text, j)
			if caselessWord(text[j:we]) {
				we = markedWordEnd(text, j) // "सेक्टर": vowel signs are marks, not letters
			}
			w := text[j:we]
			switch {
			case isCapWord(w) || caselessWord(w):
			case upperRun(text, j) == we && we-j <= 5:
			case nameParticles[w] && n > 0:
			default:
				return end
			}
			if we < len(text) && text[we] == '.' && we-j <= 5 {
				we++
			}
			letters = true
		default:
			return end
		}
		if letters {
			end = we
		}
		if we >= len(text) || text[we] != ' ' || we+1 >= len(text) || text[we+1] == ' ' {
			break
		}
		// a postal code ends the part
		if worldPostcode(text, we+1, false) > 0 {
			break
		}
		j = we + 1
	}
	return end
}

// unitChainStarts begin an address with a house or unit before the district chain; the weak
// one ("No.") needs a district or street word in the chain.
var unitChainStarts = []struct {
	p    string
	weak bool
}{
	{"H.No. ", false}, {"H. No. ", false}, {"House No. ", false}, {"Door No. ", false},
	{"D.No. ", false}, {"Plot No. ", false}, {"Flat No. ", false}, {"Flat ", false},
	{"Plot ", false}, {"House ", true}, {"Lot ", true}, {"No. ", true},
	{"मकान नं. ", false}, {"मकान नंबर ", false}, {"प्लॉट नं. ", false}, {"फ्लैट नं. ", false},
}

// chainWords mark a chain of a weak unit start as an address ("No. 12, 4th Cross, Gandhi Nagar").
var chainWords = []string{"Nagar", "Sector", "Cross", "Main", "Road", "Marg", "Colony", "Layout",
	"Block", "Phase", "Enclave", "Vihar", "Puram", "Street", "Lane", "Extension", "Stage", "Gali",
	"Brgy", "Barangay", "Purok", "Subd", "Blk"}

// unitChain matches an Indian address that starts with its unit at i ("Flat 302, Plot 14,
// Sector 21, Dwarka, New Delhi 110075", "H.No. 5-9-22, Lakdikapul, Hyderabad - 500004"), or -1.
func unitChain(text string, i int) int {
	if i+4 >= len(text) || text[i] < utf8.RuneSelf && (strings.IndexByte("HFPDNL", text[i]) < 0 || strings.IndexByte(". oOlL", text[i+1]) < 0 ||
		text[i] == 'N' && text[i+2] != '.') {
		return -1 // "H.", "Ho", "Fl", "Pl", "Do", "D.", "No."; or Devanagari ("मकान नं.")
	}
	for _, st := range unitChainStarts {
		if !strings.HasPrefix(text[i:], st.p) {
			continue
		}
		k := i + len(st.p)
		u := k
		for u < len(text) && u-k < 12 && (isAlnum(text[u]) || (text[u] == '-' || text[u] == '/') && u+1 < len(text) && isAlnum(text[u+1])) {
			u++
		}
		if u == k || !isDigit(text[k]) {
			return -1
		}
		u = secondUnit(text, u)
		le := worldLocality(text, u, true)
		if le < 0 {
			return -1
		}
		if st.weak {
			ok := chainHasStreetWord(text, u, le)
			for _, w := range chainWords {
				if ok || strings.Contains(text[u:le], w) {
					ok = true
					break
				}
			}
			if !ok {
				return -1
			}
		}
		return le
	}
	return -1
}

// colombianTypes begin a Colombian street whose number is "cross street - distance".
var colombianTypes = map[string]bool{"Calle": true, "Carrera": true, "Cra": true, "Cra.": true,
	"Cl.": true, "Kr.": true, "Avenida": true, "Av.": true, "Diagonal": true, "Transversal": true,
	"Tv.": true, "Dg.": true, "Autopista": true}

// colombianStreet matches "Calle 45 # 12-34", "Carrera 15 No. 88-64", "Calle 26 Sur # 5-10" at
// the word text[i:we] and returns the end of the number, or -1.
func colombianStreet(text string, i, we int) int {
	if strings.IndexByte("CKADT", text[i]) < 0 || we-i > 11 {
		return -1
	}
	e := we
	if e < len(text) && text[e] == '.' {
		e++
	}
	if e+1 >= len(text) || text[e] != ' ' || !isDigit(text[e+1]) {
		return -1 // the cross street's number follows the type
	}
	e = we
	if e < len(text) && text[e] == '.' {
		e++
	}
	if !colombianTypes[text[i:e]] {
		return -1
	}
	j := space(text, e)
	if j < 0 || !isDigit(text[j]) {
		return -1
	}
	d := digitsAt(text, j)
	if d-j > 3 {
		return -1
	}
	if d < len(text) && isUpper(text[d]) {
		d++
	}
	for _, q := range [...]string{" Bis", " Sur", " Este", " Norte"} {
		if strings.HasPrefix(text[d:], q) {
			d += len(q)
		}
	}
	k := -1
	for _, m := range [...]string{" # ", " #", " No. ", " No ", " N° ", " Nº ", " n.º "} {
		if strings.HasPrefix(text[d:], m) {
			k = d + len(m)
			break
		}
	}
	if k < 0 || k >= len(text) || !isDigit(text[k]) {
		return -1
	}
	a := digitsAt(text, k)
	if a-k > 3 {
		return -1
	}
	if a < len(text) && isUpper(text[a]) {
		a++
	}
	if a+1 >= len(text) || text[a] != '-' || !isDigit(text[a+1]) {
		return -1
	}
	b := digitsAt(text, a+1)
	if b-a-1 > 3 || !numRightOK(text, b) {
		return -1
	}
	return b
}

// thaiLatinStreet matches a Thai address in Latin letters at the house number at i: "55/3 Moo 2",
// "18 Soi Ari 4", "99/12 Sukhumvit Soi 24" is address.go's; it returns the end of the village
// number or the soi, or -1.
func thaiLatinStreet(text string, i int) int {
	e := digitsAt(text, i)
	if e-i > 4 {
		return -1
	}
	if e+1 < len(text) && text[e] == '/' && isDigit(text[e+1]) {
		e = digitsAt(text, e+1)
	}
	// the road before the soi: "99/12 Sukhumvit Soi 24"
	for n := 0; n < 2 && !strings.HasPrefix(text[e:], " Soi ") && !strings.HasPrefix(text[e:], " Moo "); n++ {
		s := space(text, e)
		if s < 0 || !isUpper(text[s]) {
			break
		}
		we := wordEnd(text, s)
		if !isCapWord(text[s:we]) {
			break
		}
		e = we
	}
	switch {
	case strings.HasPrefix(text[e:], " Moo "):
		k := e + 5
		d := digitsAt(text, k)
		if d == k || d-k > 2 || !numRightOK(text, d) {
			return -1
		}
		return d
	case strings.HasPrefix(text[e:], " Soi "):
		k := e + 5
		ne := k
		for n := 0; n < 3 && ne < len(text); n++ {
			if isDigit(text[ne]) {
				ne = digitsAt(text, ne)
				break
			}
			if !isLetterAt(text, ne) {
				break
			}
			we := wordEnd(text, ne)
			if !isCapWord(text[ne:we]) {
				break
			}
			ne = we
			if ne+1 < len(text) && text[ne] == ' ' && (isUpper(text[ne+1]) || isDigit(text[ne+1])) {
				ne++
				continue
			}
			break
		}
		if ne <= k || text[ne-1] == ' ' {
			return -1
		}
		return ne
	}
	return -1
}

// rtRW extends an Indonesian street with its neighbourhood units: " RT 03/RW 05",
// ", RT 002/RW 011", " RT.03 RW.05".
func rtRW(text string, e int) int {
	j := e
	if strings.HasPrefix(text[j:], ",") {
		j++
	}
	if !strings.HasPrefix(text[j:], " RT") {
		return e
	}
	k := j + 3
	if k < len(text) && (text[k] == ' ' || text[k] == '.') {
		k++
	}
	d := digitsAt(text, k)
	if d == k || d-k > 3 {
		return e
	}
	if d < len(text) && (text[d] == '/' || text[d] == ' ') && strings.HasPrefix(text[d+1:], "RW") {
		k = d + 3
		if k < len(text) && (text[k] == ' ' || text[k] == '.') {
			k++
		}
		f := digitsAt(text, k)
		if f > k && f-k <= 3 && numRightOK(text, f) {
			return f
		}
	}
	return e
}

// worldUnit extends a street ending at e with units written the way of other countries:
// " Int. 3" (Mexico), " - apto 42" (Brazil), "No: 112 D: 5" (Turkey), Indonesian RT/RW.
func worldUnit(text string, e int) int {
	if e > 0 && isDigit(text[e-1]) {
		e = unitAfterNumber(text, e)
	} else if e < len(text) && text[e] == ',' {
		e = unitWordAfter(text, e) // "4521, rue Saint-Denis, app. 3"
	}
	e = rtRW(text, e)
	// Argentina: ", piso 3 depto B"
	if strings.HasPrefix(text[e:], ", piso ") {
		if ue := unitID(text, e+len(", piso ")); ue > 0 {
			e = ue
			for _, d := range [...]string{" depto ", " dpto ", " dto. ", " of. "} {
				if strings.HasPrefix(text[e:], d) {
					if de := unitID(text, e+len(d)); de > 0 {
						e = de
					}
				}
			}
		}
	}
	for _, u := range [...]string{" Int. ", " D: ", " - apto ", " - ap. ", " - sala ", " - loja "} {
		if strings.HasPrefix(text[e:], u) {
			if ue := unitID(text, e+len(u)); ue > 0 {
				return ue
			}
		}
	}
	return e
}

// ---- addresses in other scripts ----

var jpPrefectures = strings.Fields(`北海道 青森県 岩手県 宮城県 秋田県 山形県 福島県 茨城県 栃木県 群馬県
	埼玉県 千葉県 東京都 神奈川県 新潟県 富山県 石川県 福井県 山梨県 長野県 岐阜県 静岡県 愛知県 三重県
	滋賀県 京都府 大阪府 兵庫県 奈良県 和歌山県 鳥取県 島根県 岡山県 広島県 山口県 徳島県 香川県 愛媛県
	高知県 福岡県 佐賀県 長崎県 熊本県 大分県 宮崎県 鹿児島県 沖縄県`)

var cnProvinces = strings.Fields(`北京市 天津市 上海市 重庆市 河北省 山西省 辽宁省 吉林省 黑龙江省 江苏省
	浙江省 安徽省 福建省 江西省 山东省 河南省 湖北省 湖南省 广东省 海南省 四川省 贵州省 云南省 陕西省
	甘肃省 青海省 台湾省 内蒙古自治区 广西壮族自治区 西藏自治区 宁夏回族自治区 新疆维吾尔自治区 臺北市
	台北市 新北市 臺中市 台中市 高雄市 桃園市`)

var krRegions = strings.Fields(`서울특별시 서울시 서울 부산광역시 부산시 대구광역시 인천광역시 광주광역시
	대전광역시 울산광역시 세종특별자치시 경기도 강원도 강원특별자치도 충청북도 충청남도 전라북도
	전북특별자치도 전라남도 경상북도 경상남도 제주특별자치도 제주도`)

// scriptAddresses appends the addresses written in Japanese without a postal code, Chinese,
// Korean, Thai, Arabic and Hebrew.
func scriptAddresses(text string, out []Entity) []Entity {
	if !hasHighByte(text) {
		return out // every shape here has letters of another script
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < 0xD7 {
			if isDigit(c) && numLeftOK(text, i) {
				if e := thaiAddress(text, i); e > 0 {
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: addrScore + addrLocalBoost})
					i = e
					continue
				}
				// A house number in ASCII digits before an Arabic street word: "15 شارع ...".
				if e, score := arabicAddress(text, i); e > 0 {
					out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
					i = e
					continue
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		var e int
		score := addrScore + addrLocalBoost
		switch classOf(r) {
		case scHan:
			e = hanAddress(text, i)
		case scHangul:
			e = koreanAddress(text, i)
		case scArabic:
			e, score = arabicAddress(text, i)
		case scHebrew:
			e, score = hebrewAddress(text, i)
		default:
			if r >= '٠' && r <= '٩' {
				e, score = arabicAddress(text, i)
			} else {
				e = -1
			}
		}
		if e > 0 {
			out = append(out, Entity{Type: TypeStreetAddress, Start: i, End: e, Score: score})
			i = e
			continue
		}
		i += n
	}
	return out
}

// hanAddress matches a Japanese address from its prefecture ("京都府京都市左京区吉田本町3-14") or
// a Chinese one from its province or municipality ("上海市浦东新区张江路88弄3号502室") at i.
func hanAddress(text string, i int) int {
	r, _ := utf8.DecodeRuneInString(text[i:])
	for _, p := range addrStarts[r] {
		if strings.HasPrefix(text[i:], p) {
			if jpPrefecture[p] {
				return jpAddressBody(text, i+len(p))
			}
			return cnAddressBody(text, i+len(p))
		}
	}
	return -1
}

// addrStarts indexes the prefectures, provinces, regions and street words that start an address
// in another script by their first rune.
var (
	addrStarts   = map[rune][]string{}
	jpPrefecture = map[string]bool{}
)

func init() {
	// Hindi house, plot and flat words start unitChain's chains (SafePrefix holds them too).
	for _, l := range [...][]string{jpPrefectures, cnProvinces, krRegions, {"شارع", "רחוב", "רח'", "שדרות"}, {"मकान", "प्लॉट", "फ्लैट"}} {
		for _, p := range l {
			r, _ := utf8.DecodeRuneInString(p)
			addrStarts[r] = append(addrStarts[r], p)
		}
	}
	for _, p := range jpPrefectures {
		jpPrefecture[p] = true
	}
}

// jpParticles end a Japanese address: a hiragana particle after a place is prose ("大阪府警は").
const jpParticles = "はがをにでとへもやの、。，．「」（）()"

// jpAddressBody returns the end of a Japanese address after its prefecture at j: a city, ward,
// town or village, the district and block numbers with at least one hyphen or 丁目 ("2-14-7",
// "2丁目14-7"), and a building and floor that end the line; or -1.
func jpAddressBody(text string, j int) int {
	admin := false
	k := j
	for k < len(text) && k-j < 120 {
		r, n := utf8.DecodeRuneInString(text[k:])
		if isDigit(text[k]) || strings.ContainsRune(jpParticles, r) || !(isHan(r) || isKana(r) || r == 'ー' || r == 'ヶ') {
			break
		}
		if r == '市' || r == '区' || r == '町' || r == '村' || r == '郡' {
			admin = true
		}
		k += n
	}
	if !admin || k == j || k >= len(text) || !isDigit(text[k]) {
		return -1
	}
	e := digitsAt(text, k)
	block := false
	for e < len(text) {
		switch {
		case text[e] == '-' && e+1 < len(text) && isDigit(text[e+1]):
			e = digitsAt(text, e+1)
			block = true
			continue
		case strings.HasPrefix(text[e:], "丁目"):
			e += len("丁目")
			block = true
			if e < len(text) && isDigit(text[e]) {
				e = digitsAt(text, e)
			}
			continue
		case strings.HasPrefix(text[e:], "番地"), strings.HasPrefix(text[e:], "番"), strings.HasPrefix(text[e:], "号"):
			_, n := utf8.DecodeRuneInString(text[e:])
			if strings.HasPrefix(text[e:], "番地") {
				n = len("番地")
			}
			e += n
			block = true
			if e < len(text) && isDigit(text[e]) {
				e = digitsAt(text, e)
			}
			continue
		}
		break
	}
	if !block {
		return -1
	}
	return jpBuilding(text, e)
}

// jpBuilding extends a Japanese address ending at end with the building and floor when they
// end the line: up to three words after a space ("パークウェースクエア2 4階", "芝公園ビル5F").
func jpBuilding(text string, end int) int {
	k := end
	for n := 0; n < 3; n++ {
		var s int
		switch {
		case strings.HasPrefix(text[k:], " "):
			s = k + 1
		case strings.HasPrefix(text[k:], "\u3000"):
			s = k + len("\u3000")
		default:
			return end
		}
		if s >= len(text) {
			return end
		}
		r, _ := utf8.DecodeRuneInString(text[s:])
		if !(isHan(r) || isKana(r) || isAlnum(text[s])) || n == 0 && isDigit(text[s]) && !strings.ContainsAny(text[s:min(len(text), s+8)], "階F") {
			return end
		}
		t := s
		for t < len(text) && text[t] != ' ' && text[t] != '\n' && text[t] != '\r' && text[t] != '\t' && !strings.HasPrefix(text[t:], "\u3000") && t-s < 64 {
			t++
		}
		if t == len(text) || text[t] == '\n' || text[t] == '\r' {
			return t
		}
		k = t
	}
	return end
}

// cnAddressBody returns the end of a Chinese address after its province at j: districts and a
// road (路, 街, 道, 巷, 弄) with a number and 号, then buildings, units and rooms (栋, 楼, 单元,
// 室, 层); or -1.
func cnAddressBody(text string, j int) int {
	road, hao, end := false, false, -1
	digits := false
	for k := j; k < len(text) && k-j < 200; {
		if isDigit(text[k]) {
			k = digitsAt(text, k)
			digits = true
			continue
		}
		r, n := utf8.DecodeRuneInString(text[k:])
		if !isHan(r) {
			break
		}
		switch r {
		case '路', '街', '道', '巷':
			if !digits {
				road = true
			}
		case '号', '弄', '栋', '幢', '楼', '室', '层', '座':
			if digits && isDigit(text[k-1]) {
				if r == '号' {
					hao = true
				}
				end = k + n
			}
		case '单':
			if digits && isDigit(text[k-1]) && strings.HasPrefix(text[k:], "单元") {
				end = k + len("单元")
				k = end
				continue
			}
		case '，', '。':
		}
		k += n
	}
	if !road || !hao {
		return -1
	}
	return end
}

// koreanAddress matches a Korean road-name address from its province or metropolitan city at i:
// up to four more words, a road word ending in 로 or 길, its number, and a building whose last
// word is a floor or room ("12층", "1203호"): "서울특별시 마포구 월드컵북로 396 누리꿈스퀘어 12층".
func koreanAddress(text string, i int) int {
	if k, _ := classBefore(text, i); k == scHangul {
		return -1
	}
	we := scriptWordEnd(text, i, scHangul)
	ok := false
	for _, p := range krRegions {
		if text[i:we] == p {
			ok = true
			break
		}
	}
	if !ok {
		return -1
	}
	k := we
	for n := 0; n < 5; n++ {
		if k+1 >= len(text) || text[k] != ' ' {
			return -1
		}
		s := k + 1
		if c, _ := classAt(text, s); c != scHangul {
			return -1
		}
		e := scriptWordEnd(text, s, scHangul)
		// "테헤란로7길": a numbered side road
		if e < len(text) && isDigit(text[e]) {
			d := digitsAt(text, e)
			if strings.HasPrefix(text[d:], "길") {
				e = d + len("길")
			}
		}
		w := text[s:e]
		if strings.HasSuffix(w, "로") || strings.HasSuffix(w, "길") {
			if e+1 < len(text) && text[e] == ' ' && isDigit(text[e+1]) {
				num := digitsAt(text, e+1)
				if num-e-1 > 4 {
					return -1
				}
				if num+1 < len(text) && text[num] == '-' && isDigit(text[num+1]) {
					num = digitsAt(text, num+1)
				}
				if num < len(text) && isWordByte(text[num]) && text[num] < 0x80 {
					return -1
				}
				return krBuilding(text, num)
			}
		}
		k = e
	}
	return -1
}

// krBuilding extends a Korean address ending at end with up to three words whose last is a
// floor or room: " 누리꿈스퀘어 12층", ", 1203호", " 에이치스퀘어 N동 7층".
func krBuilding(text string, end int) int {
	k := end
	if strings.HasPrefix(text[k:], ",") {
		k++
	}
	best := end
	for n := 0; n < 3; n++ {
		if k+1 >= len(text) || text[k] != ' ' {
			break
		}
		s := k + 1
		t := s
		for t < len(text) && text[t] != ' ' && text[t] != '\n' && text[t] != ',' && t-s < 40 {
			t++
		}
		if t == s {
			break
		}
		w := text[s:t]
		if strings.HasSuffix(w, "층") || strings.HasSuffix(w, "호") {
			best = t
		}
		k = t
	}
	return best
}

// thaiAddress matches a Thai address in Thai at the house number at i: "99/8 หมู่ 4 ตำบลสุเทพ
// อำเภอเมืองเชียงใหม่ จังหวัดเชียงใหม่ 50200": a village, soi or road word after the number, a
// subdistrict, district or province word, and the five-digit postal code on the same line.
func thaiAddress(text string, i int) int {
	e := digitsAt(text, i)
	if e-i > 4 {
		return -1
	}
	if e+1 < len(text) && text[e] == '/' && isDigit(text[e+1]) {
		e = digitsAt(text, e+1)
	}
	ok := false
	for _, w := range [...]string{" หมู่", " ม.", " ซอย", " ซ.", " ถนน", " ถ."} {
		if strings.HasPrefix(text[e:], w) {
			ok = true
			break
		}
	}
	if !ok {
		return -1
	}
	admin := false
	for k := e; k < len(text) && k-e < 400; {
		if text[k] == '\n' || text[k] == '\r' {
			return -1
		}
		if isDigit(text[k]) {
			d := digitsAt(text, k)
			if d-k == 5 && text[k-1] == ' ' && admin && numRightOK(text, d) {
				return d
			}
			k = d
			continue
		}
		for _, w := range [...]string{"ตำบล", "ต.", "แขวง", "อำเภอ", "อ.", "เขต", "จังหวัด", "จ.", "กรุงเทพ"} {
			if strings.HasPrefix(text[k:], w) {
				admin = true
			}
		}
		_, n := utf8.DecodeRuneInString(text[k:])
		k += n
	}
	return -1
}

// arabicDigitsAt returns the end of a run of ASCII or Arabic-Indic digits at i.
func arabicDigitsAt(text string, i int) int {
	for i < len(text) {
		if isDigit(text[i]) {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r < '٠' || r > '٩' {
			break
		}
		i += n
	}
	return i
}

// arabicAddress matches "شارع الملك فهد، حي العليا، الرياض 12214" (a street, parts after "، "
// and a postal code: 0.9) or "١٢ شارع التحرير" (a house number before the street, which ends at
// the next comma: 0.7) at i.
func arabicAddress(text string, i int) (int, float64) {
	if k, _ := classBefore(text, i); k == scArabic {
		return -1, 0
	}
	num := false
	j := i
	if d := arabicDigitsAt(text, i); d > i {
		if d+1 >= len(text) || text[d] != ' ' {
			return -1, 0
		}
		num, j = true, d+1
	}
	if !strings.HasPrefix(text[j:], "شارع ") {
		return -1, 0
	}
	// the street's name: up to three words, then maybe a number
	k := j + len("شارع ")
	se := -1
	for n := 0; n < 3 && k < len(text); n++ {
		c, _ := classAt(text, k)
		if c != scArabic {
			if d := arabicDigitsAt(text, k); d > k {
				se = d
			}
			break
		}
		se = scriptWordEnd(text, k, scArabic)
		if se+1 >= len(text) || text[se] != ' ' {
			break
		}
		k = se + 1
	}
	if se < 0 {
		return -1, 0
	}
	// parts after "،" ending with a postal code
	p := se
	for n := 0; n < 4; n++ {
		if !strings.HasPrefix(text[p:], "، ") && !strings.HasPrefix(text[p:], ", ") {
			break
		}
		s := p + len("، ")
		if text[p] == ',' {
			s = p + 2
		}
		t := s
		words := 0
		for t < len(text) && words < 4 {
			c, _ := classAt(text, t)
			if c != scArabic {
				break
			}
			t = scriptWordEnd(text, t, scArabic)
			words++
			if t+1 < len(text) && text[t] == ' ' {
				if d := arabicDigitsAt(text, t+1); d > t+1 {
					if d-t-1 == 5 || d-t-1 == 10 { // five ASCII or five Arabic-Indic digits
						return d, addrScore + addrLocalBoost
					}
					break
				}
				if c2, _ := classAt(text, t+1); c2 == scArabic {
					t++
					continue
				}
			}
			break
		}
		if words == 0 {
			break
		}
		p = t
	}
	if num {
		return se, addrScore
	}
	return -1, 0
}

// hebrewAddress matches "רחוב הרצל 15, רמת גן 5252205": a street word, a name of up to three
// words and a number (0.7), then a city and a seven-digit postal code (0.9), at i.
func hebrewAddress(text string, i int) (int, float64) {
	if k, _ := classBefore(text, i); k == scHebrew {
		return -1, 0
	}
	var j int
	switch {
	case strings.HasPrefix(text[i:], "רחוב "):
		j = i + len("רחוב ")
	case strings.HasPrefix(text[i:], "רח' "):
		j = i + len("רח' ")
	case strings.HasPrefix(text[i:], "שדרות "):
		j = i + len("שדרות ")
	default:
		return -1, 0
	}
	ne := -1
	for n := 0; n < 4 && j < len(text); n++ {
		if isDigit(text[j]) {
			if n == 0 {
				return -1, 0
			}
			ne = digitsAt(text, j)
			break
		}
		c, _ := classAt(text, j)
		if c != scHebrew {
			return -1, 0
		}
		we := scriptWordEnd(text, j, scHebrew)
		if we+1 >= len(text) || text[we] != ' ' {
			return -1, 0
		}
		j = we + 1
	}
	if ne < 0 || ne-j > 4 || !numRightOK(text, ne) {
		return -1, 0
	}
	if strings.HasPrefix(text[ne:], ", ") {
		k := ne + 2
		for n := 0; n < 3 && k < len(text); n++ {
			c, _ := classAt(text, k)
			if c != scHebrew {
				break
			}
			we := scriptWordEnd(text, k, scHebrew)
			if we+1 < len(text) && text[we] == ' ' {
				if d := digitsAt(text, we+1); d-we-1 == 7 || d-we-1 == 5 {
					if numRightOK(text, d) {
						return d, addrScore + addrLocalBoost
					}
				}
			}
			if we+1 >= len(text) || text[we] != ' ' {
				break
			}
			k = we + 1
		}
	}
	return ne, addrScore
}

// postcodeCityStreet matches the Hungarian order at i: postal code, city, then the street
// ("4026 Debrecen, Péterfia utca 12. 3/8."), or -1. The street must be one of address.go's
// layouts, so a code and a city before ordinary words are no address.
func postcodeCityStreet(text string, i int) int {
	d := digitsAt(text, i)
	if d-i != 4 {
		return -1
	}
	ce := postalCity(text, d)
	if ce < 0 || !strings.HasPrefix(text[ce:], ", ") {
		return -1
	}
	s := ce + 2
	if s >= len(text) || !isLetterAt(text, s) {
		return -1
	}
	we := wordEnd(text, s)
	e := typeAfterName(text, we)
	if e < 0 {
		return -1
	}
	// "12. 3/8.": the house number's full stop, then floor/door
	if e+3 < len(text) && text[e] == '.' && text[e+1] == ' ' && isDigit(text[e+2]) {
		f := digitsAt(text, e+2)
		if f+1 < len(text) && text[f] == '/' && isDigit(text[f+1]) {
			g := digitsAt(text, f+1)
			if g-f-1 <= 3 && g < len(text) && text[g] == '.' {
				return g + 1
			}
		}
	}
	return e
}

// stAfterPrefix reports whether the lower-case word w, cut by the end of the text, may still
// become a street type written after the name ("út", "utca", "gate"): SafePrefix holds the
// name before it.
func stAfterPrefix(w string) bool {
	var buf [16]byte
	lw, ok := lowerInto(buf[:0:len(buf)], w)
	if !ok {
		return true
	}
	l := string(lw)
	for k, v := range streetWords {
		if v&stAfter != 0 && strings.HasPrefix(k, l) {
			return true
		}
	}
	return false
}
