package detect

import (
	"strings"
	"testing"
)

// TestShapeNames covers scriptshape.go and namefamily.go with made-up names: each mechanism, and
// the places, streets, organisations and common words of the same scripts it must leave alone.
func TestShapeNames(t *testing.T) {
	e := newEngine(t, Options{Types: []string{TypePerson}})
	checkScans(t, e, []scanCase{
		{"ka strong ending with a given name", "გამარჯვებული: თემურ ხარაიშვილი (ზესტაფონი)", []string{"person:თემურ ხარაიშვილი"}},
		{"ka case ending outside the span", "კრება ჩატარდა გოცირიძეს სახლში.", []string{"person:გოცირიძე"}},
		{"ka weak ending as a list item", "მონაწილეები: ლალი ქარდავა, ნუკრი შონია", []string{"person:ლალი ქარდავა", "person:ნუკრი შონია"}},
		{"ka genitive and nouns", "სპორტის სასახლე ბორის ხარაიშვილის სახელობის. ჩვენი ქალიშვილი და კომპანია საქართველოს ფედერაცია.", nil},
		{"hy family name in -յան", "Մրցանակը ստացավ Արմեն Վարդանյանը, իսկ Սոնա Հակոբյանին շնորհավորեցին։", []string{"person:Արմեն Վարդանյան", "person:Սոնա Հակոբյան"}},
		{"hy genitive and abstract nouns", "ԲԱՐԵԳՈՐԾՈՒԹՅԱՆ ՀԱՄԵՐԳ Մարտիրոսյանի անվան դպրոցում։ Համագործակցության ծրագիր։", nil},
		{"el given name first", "Η σύμβουλος Ευτυχία Αργυροπούλου θα μιλήσει.", []string{"person:Ευτυχία Αργυροπούλου"}},
		{"el family name first in a table", "1    Θεοχαρίδης Παντελής      20,00 €", []string{"person:Θεοχαρίδης Παντελής"}},
		{"el abbreviated given name", "Α2   Σαραντάκη Ελ.   12,00", []string{"person:Σαραντάκη Ελ."}},
		{"el capitals in a row", "1. ΑΝΤΩΝΟΠΟΥΛΟΣ ΣΩΤΗΡΙΟΣ\n2. ΜΑΡΙΑ ΧΑΤΖΗΔΑΚΗ\nΑΘΗΝΑΪΚΗ ΖΥΘΟΠΟΙΙΑ Α.Ε.", []string{"person:ΑΝΤΩΝΟΠΟΥΛΟΣ ΣΩΤΗΡΙΟΣ"}},
		{"ko chat names after a time stamp", "[오후 3:12] 민지: 내일 만나\n[오후 3:13] 하늘: 좋아", []string{"person:민지", "person:하늘"}},
		{"name labels", "სახელი და გვარი: ნანა ბერიაშვილი\nԱնուն, ազգանուն՝ Լուսինե Գասպարյան\nሙሉ ስም፦ ቤተልሔም ዓለሙ\nنام و نام خانوادگی: بهاره صالحی", []string{"person:ნანა ბერიაშვილი", "person:Լուսինե Գասպարյան", "person:ቤተልሔም ዓለሙ", "person:بهاره صالحی"}},
		{"label values that are no name", "მისამართი: რუსთაველის გამზირი 12\nՀասցե՝ Աբովյան փողոց 3\nአድራሻ፦ ቦሌ ክፍለ ከተማ", nil},
		{"el months, saints, streets", "Την 3η Δεκεμβρίου στον Ιερό Ναό Αγίου Νικολάου, οδός Καποδιστρίου 12.", nil},
		{"am title", "ሰብሳቢ አቶ ገመቹ ዋቅጅራ፣ ጸሐፊ ወ/ሮ ትዕግስት በላይ።", []string{"person:ገመቹ ዋቅጅራ", "person:ትዕግስት በላይ"}},
		{"am list item", "1. ብሩክ ደምሴ — 0911 000 111", []string{"person:ብሩክ ደምሴ"}},
		{"am place label", "ከተማ፦ ደብረ ብርሃን\nስብሰባ፦ እሁድ ጠዋት", nil},
		{"ar nasab", "الأحد: ناصر بن سعود\nالمشرف: أبو خليل", []string{"person:ناصر بن سعود", "person:أبو خليل"}},
		{"ar nisba item", "السبت: مروان العتيبي", []string{"person:مروان العتيبي"}},
		{"ar organisations", "وأعلن بنك البلاد عن فرع جديد، وزار الوفد مسجد أحمد عمر في المدينة. يسكن سالم عبد الرحمن في جدة.", []string{"person:سالم عبد الرحمن"}},
		{"fa title and list", "خانم پروانه اسدی\nفرزندان: بهرام نادری، شیدا نادری", []string{"person:پروانه اسدی", "person:بهرام نادری", "person:شیدا نادری"}},
		{"fa places", "آدرس: خیابان ولیعصر، کوچه بهاری\nدانشگاه شریف و بانک سپه", nil},
		{"ur son of", "درخواست گزار: کامران یوسف ولد نذیر احمد", []string{"person:کامران یوسف", "person:نذیر احمد"}},
		{"hi role before", "प्रधान कमलेश यादव बैठक लेंगी।", []string{"person:कमलेश यादव"}},
		{"hi list after a label", "इनका सत्यापन बाकी है: भोला नाथ, सुमन लता रावत।", []string{"person:भोला नाथ", "person:सुमन लता रावत"}},
		{"hi things and places", "जरूरी दस्तावेज: आधार कार्ड, राशन कार्ड।\nपता: गोमती नगर, लखनऊ", nil},
		{"hi abbreviated title", "पिता का नाम: स्व. दीनदयाल मौर्य", []string{"person:दीनदयाल मौर्य"}},
		{"el chat speaker", "[20:14] Στάθης: θα έρθω στις 9", []string{"person:Στάθης"}},
		{"zh list of names", "请以下同学留下：孙一鸣、钱雨桐、郑好", []string{"person:孙一鸣", "person:钱雨桐", "person:郑好"}},
		{"zh note in brackets", "得獎人：\n謝宜庭（化學系二年級）", []string{"person:謝宜庭"}},
		{"zh things in a list", "安全、方法、程序都要检查。", nil},
		{"jp iteration mark", "佐々木々々、時々", nil},
		{"romanised family first", "Panel: chaired by ZHANG Wei with KIM Ha-eun", []string{"person:ZHANG Wei", "person:KIM Ha-eun"}},
		{"vietnamese in a table", "STT  Họ và tên\n1    Nguyễn Văn Toàn      12/03/2012\nGiáo viên: cô Phạm Thu Trang", []string{"person:Nguyễn Văn Toàn", "person:Phạm Thu Trang"}},
		{"vietnamese in capitals", "03  HOANG Minh Tuan   MR   14A\nChair: NGUYEN Van An", []string{"person:HOANG Minh Tuan", "person:NGUYEN Van An"}},
		{"korean chat with a time of day", "[오후 3:12] 김하린: 내일 만나요", []string{"person:김하린"}},
		{"vietnamese places", "Hotel in Ho Chi Minh City, 45 Lê Lợi, Phường Bến Nghé; Le Monde and Do Not Disturb.", nil},
		{"acronyms before capitalised words", "RN Anna Smith and the DPD Polska depot; IBM Research; NASA Headquarters", []string{"person:Anna Smith"}},
	})
}

// TestShapeNamesStream cuts each case above where SafePrefix allows and checks that no name is
// cut: what SafePrefix passes never holds the start of a name found in the whole text.
func TestShapeNamesStream(t *testing.T) {
	e := newEngine(t, Options{})
	for _, text := range []string{
		"1    Θεοχαρίδης Παντελής      20,00 €",
		"ተገኝተዋል፦ ገመቹ ዋቅጅራ፣ ብሩክ ደምሴ።",
		"الأحد: ناصر بن سعود الشهري\nالمشرف: أبو خليل",
		"इनका सत्यापन बाकी है: भोला नाथ, सुमन लता रावत।",
		"Panel chaired by ZHANG Wei with KIM Ha-eun today",
		"1    Nguyễn Văn Toàn      12/03/2012\n2    Lê Thị Hoa   01/01/2012",
		"მონაწილეები: ლალი ქარდავა, ნუკრი შონია და სხვები",
	} {
		full := e.Scan(text)
		for cut := 1; cut <= len(text); cut++ {
			if !strings.HasPrefix(text, text[:cut]) || cut < len(text) && (text[cut]&0xC0) == 0x80 {
				continue
			}
			p := e.SafePrefix(text[:cut], 0)
			for _, x := range full {
				if x.Start < p && x.End > p {
					t.Errorf("%q cut at %d: SafePrefix passes %d, inside %s %q", text, cut, p, x.Type, x.Text)
				}
			}
		}
	}
}
