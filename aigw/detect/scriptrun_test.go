package detect

import (
	"testing"
)

// TestRunNames covers scriptrun.go: names without honorifics in running text, chats and news,
// and look-alikes that must stay no name (common words that begin with a family-name
// character, places, companies, offices named in place of a person).
func TestRunNames(t *testing.T) {
	e := newEngine(t, Options{Types: []string{TypePerson}})
	checkScans(t, e, []scanCase{
		{"jp full name before a role", "会社員の山田健一容疑者（34）を逮捕した。", []string{"person:山田健一"}},
		{"jp full name before a particle", "弊社の藤原健二が担当いたします。", []string{"person:藤原健二"}},
		{"jp family name after its full name", "弊社の藤原健二が担当いたします。ご不明な点は藤原までお問い合わせください。", []string{"person:藤原健二", "person:藤原"}},
		{"jp family name after a role noun", "担当の小林（携帯 080-3391-7724）まで", []string{"person:小林"}},
		{"jp self-introduction", "株式会社ミナトシステムの高橋でございます。", []string{"person:高橋"}},
		{"jp space inside, title", "田中 一郎様宛のお荷物", []string{"person:田中 一郎"}},
		{"jp katakana reading", "氏名：佐々木 美咲（ササキ ミサキ）様", []string{"person:佐々木 美咲", "person:ササキ ミサキ"}},
		{"jp chat", "[10:02] 小林: 明日の打ち合わせ、松本翔太も参加します", []string{"person:小林", "person:松本翔太"}},
		{"jp places and companies", "京都駅から嵐山まで。大阪城公園、田中貴金属の銀座店、山下公園、中村屋のカレー、松本城、新宿御苑。", nil},
		{"jp prefecture police", "大阪府警は24日、発表した。中山大学と藤田観光が協力する。", nil},
		{"zh role noun before", "国家统计局新闻发言人付凌晖24日表示，记者王小明报道。", []string{"person:付凌晖", "person:王小明"}},
		{"zh verb after", "会议纪要\n吴芳介绍了第三季度销售情况，郑国庆建议增加预算。", []string{"person:吴芳", "person:郑国庆"}},
		{"zh list", "出席：周伟、吴芳、郑国庆、何丽娟", []string{"person:周伟", "person:吴芳", "person:郑国庆", "person:何丽娟"}},
		{"zh chat", "刘洋：明天下午三点开会，记得带合同\n陈静：好的，我知道了。", []string{"person:刘洋", "person:陈静"}},
		{"zh salutation", "尊敬的黄志明：\n您好！", []string{"person:黄志明"}},
		{"zh common words", "许多人认为方案可行，方面表示同意。周末在上海出差，马上回来。任何问题请拨打热线。高层表示满意。", nil},
		{"zh form values", "高铁：G123\n金额：¥459.00\n周期：每月", nil},
		{"zh places", "中山大学位于广州市海珠区，黄山和张家界是热门旅游目的地。王府井和南京路购物。", nil},
		{"ko age", "김민수(42) 씨는 말했다.", []string{"person:김민수"}},
		{"ko chat", "이지은: 내일 회의 몇 시야?\n정우성: 10시. 늦지 마", []string{"person:이지은", "person:정우성"}},
		{"ko role before", "궁금한 점은 담당자 임수진에게 연락 주세요.", []string{"person:임수진"}},
		{"ko closing", "김민준 드림\n대리 | 한빛소프트", []string{"person:김민준"}},
		{"ko labels and words", "연락처: 010-3344-5566\n배송지: 서울 마포구\n정말 감사합니다. 박물관 관람은 강남구청 앞에서 출발합니다. 김치찌개 먹으러 가자", nil},
		{"th verb of speech", "สมศักดิ์ ทองดี กล่าวว่า ร้านได้รับผลกระทบ ส่วนมาลี วงศ์สวัสดิ์ ระบุว่าจะย้าย", []string{"person:สมศักดิ์ ทองดี", "person:มาลี วงศ์สวัสดิ์"}},
		{"th office before verb", "ผู้ว่าราชการจังหวัด เชียงใหม่ กล่าวว่า จะช่วยเหลือ", nil},
		{"th chat", "09:12 สมศรี วงศ์สวัสดิ์: พรุ่งนี้ประชุมกี่โมงคะ", []string{"person:สมศรี วงศ์สวัสดิ์"}},
		{"th label", "ผู้รับ: ประเสริฐ แก้วมณี โทร 089-765-4321", []string{"person:ประเสริฐ แก้วมณี"}},
		{"ar verb before", "قال أحمد الخطيب إن الاجتماع سيعقد، وأضافت ليلى حداد أن الوفد سيصل.", []string{"person:أحمد الخطيب", "person:ليلى حداد"}},
		{"ar office", "قال رئيس الوزراء إن الحكومة ستعمل، وقال المتحدث باسم الوزارة إن القرار نهائي.", nil},
		{"he verb after", "דוד כהן אמר כי החברה תגייס עובדים, ומיכל לוי הוסיפה שהמשרד יעבור.", []string{"person:דוד כהן", "person:מיכל לוי"}},
		{"he office", "ראש הממשלה אמר כי המשבר נגמר.", nil},
		{"he greeting", "שלום דני,\nשלום לכולם, מה נשמע?", []string{"person:דני"}},
	})
}
