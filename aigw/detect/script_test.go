package detect

import "testing"

// TestScriptNames covers the cues and shapes of script.go, one script per group, and the
// words that take the same honorifics as names.
func TestScriptNames(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"russian intro", "Здравствуйте! Меня зовут Пётр Иванович Соколов, я инженер.", []string{"Пётр Иванович Соколов"}},
		{"russian title", "Встреча с г-жой Лебедевой перенесена.", []string{"Лебедевой"}},
		{"russian patronymic without cue", "Вчера Анна Сергеевна подписала акт.", []string{"Анна Сергеевна"}},
		{"russian family name and patronymic", "Подписал Кравченко Олег Миколайович сегодня.", []string{"Кравченко Олег Миколайович"}},
		{"russian initials", "Докладчик Соколов П. И. выступил, затем И.П. Морозова.", []string{"Соколов П. И.", "И.П. Морозова"}},
		{"russian label list", "Участники: Лебедев А. С., Наталья Котова и Рустам Ибрагимов.", []string{"Лебедев А. С.", "Наталья Котова", "Рустам Ибрагимов"}},
		{"russian closing", "Жду ответа.\nС уважением,\nВиктор Гусев", []string{"Виктор Гусев"}},
		{"russian capitals are no names", "Компания Северный Ветер открыла офис в Казани.", nil},
		{"russian dialogue dash", "— Привет, как дела?", nil},
		{"ukrainian label", "Прізвище: Бондаренко", []string{"Бондаренко"}},
		{"russian known given and family name", "Вчера Дмитрий Орлов приехал в офис.", []string{"Дмитрий Орлов"}},
		{"russian family name first", "Список: Орлова Наталья, затем остальные.", []string{"Орлова Наталья"}},
		{"russian given name mid-sentence", "Посылку привёз курьер Алексей вчера.", []string{"Алексей"}},
		{"russian given names in oblique cases", "Встреча с Ириной и письмо от Алексея.", []string{"Ириной", "Алексея"}},
		{"russian places in oblique cases", "Встреча в Казани и в Москве.", nil},
		{"russian street named after a word", "Офис на проспект Мира и в Казани.", nil},
		{"russian places", "Мы летим из Москвы в Новосибирск.", nil},
		{"greek title", "Παρακαλώ ενημερώστε την κυρία Σοφία Αντωνίου για την αλλαγή.", []string{"Σοφία Αντωνίου"}},
		{"greek intro", "Γεια σας, με λένε Νίκο και", []string{"Νίκο"}},
		{"greek article after closing", "Ευχαριστώ,\nΗ ομάδα", nil},
		{"arabic label", "الاسم: عمر الفاروق\nالهاتف", []string{"عمر الفاروق"}},
		{"arabic title stops before a verb", "قال السيد كريم يريد موعدا", []string{"كريم"}},
		{"arabic i am from", "أنا ليلى من بيروت", []string{"ليلى"}},
		{"arabic i am happy", "أنا سعيد جدا", nil},
		{"hebrew intro", "היי, שמי דנה כהן ואני גרה בתל אביב", []string{"דנה כהן"}},
		{"hebrew title", "פגישה עם גב' רחל מזרחי מחר", []string{"רחל מזרחי"}},
		{"hindi intro", "मेरा नाम सुनीता वर्मा है।", []string{"सुनीता वर्मा"}},
		{"hindi title", "श्रीमती कविता सिंह ने फोन किया", []string{"कविता सिंह"}},
		{"thai title and family name", "ติดต่อ นายประยุทธ มั่นคง โทร 02", []string{"ประยุทธ มั่นคง"}},
		{"thai thank you is no title", "ขอบคุณมากครับ", nil},
		{"korean title word", "내일 김민지 과장이 발표합니다", []string{"김민지"}},
		{"korean glued honorific", "최수아님께 감사드립니다", []string{"최수아"}},
		{"korean intro", "저는 강동원입니다.", []string{"강동원"}},
		{"korean role noun", "고객님 감사합니다. 선생님 안녕하세요", nil},
		{"chinese title after family name", "刘先生明天到。", []string{"刘"}},
		{"chinese name after a function character", "请把文件交给黄晓明经理。", []string{"黄晓明"}},
		{"chinese label", "收件人：郭静\n电话", []string{"郭静"}},
		{"chinese intro", "大家好，我叫周杰。", []string{"周杰"}},
		{"chinese company label is no name", "客户名称：北京华远科技", nil},
		{"japanese san", "経理の小林さんに確認します。", []string{"小林"}},
		{"japanese katakana name", "ブラウンさんから連絡がありました。", []string{"ブラウン"}},
		{"japanese role nouns", "お客様と患者様と皆さんとユーザーさん", nil},
		{"japanese label with space", "氏名：山田 太郎\n", []string{"山田 太郎"}},
		{"japanese moushimasu", "はじめまして、木村と申します。", []string{"木村"}},
		{"japanese specification", "仕様書を確認してください。", nil},
		{"japanese polite nouns", "ご苦労様です。お得意様と取引先様へ。ABC株式会社様、八百屋さん", nil},
		{"japanese department head", "営業部長と技術課長が出席。", nil},
		{"chinese teacher of a subject", "担任の先生と数学老师和项目经理", nil},
		{"korean role nouns with honorifics", "사용자님, 전문가님, 마음씨 좋은 분", nil},
		{"thai compounds", "คุณภาพดี นายกรัฐมนตรี นางพยาบาล", nil},
		{"arabic dear customer", "عزيزي العميل، شكرا", nil},
		{"hindi respected sir", "आदरणीय महोदय, नमस्ते", nil},
		{"russian dear client", "Уважаемый Клиент! Исполнитель: Компания Альфа", nil},
		// name.go's vetoes for things named after people keep people
		{"possessive without a business noun", "We met Maria Lopez's sister at the Kitchen.", []string{"Maria Lopez"}},
		{"dog walker", "Our dog walker, Tomasz Nowak, is away.", []string{"Tomasz Nowak"}},
		{"owner of a pet", "Patient: Biscuit (cat). Owner: Eleni Papadopoulou (client since 2019).", []string{"Eleni Papadopoulou"}},
	}
	e := newEngine(t, Options{Types: []string{TypePerson}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, x := range e.Scan(tt.text) {
				got = append(got, x.Text)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Scan(%q) = %q; want %q", tt.text, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Scan(%q) = %q; want %q", tt.text, got, tt.want)
				}
			}
		})
	}
}

// TestNumbersInUnspacedScripts: numbers glued to Chinese, Japanese and Korean text or to
// full-width punctuation are found (with a birth word for dates).
func TestNumbersInUnspacedScripts(t *testing.T) {
	e := newEngine(t, Options{})
	for _, tt := range []struct{ text, typ, want string }{
		{"电话：+86 139 1234 5678", TypePhone, "+86 139 1234 5678"},
		{"生年月日：1985年11月3日", TypeDateOfBirth, "1985年11月3日"},
		{"생년월일: 1990년 2월 14일", TypeDateOfBirth, "1990년 2월 14일"},
		{"出生日期1992年7月30日", TypeDateOfBirth, "1992年7月30日"},
		{"会议日期：2026年11月3日", TypeDateOfBirth, ""},
	} {
		if got := scanType(e, tt.text, tt.typ); got != tt.want {
			t.Errorf("Scan(%q) %s = %q; want %q", tt.text, tt.typ, got, tt.want)
		}
	}
}
