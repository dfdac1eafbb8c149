package detect

import (
	"strings"
	"unicode/utf8"
)

// Names in non-Latin scripts without an honorific or a label: in running text, chats and news.
// The evidence is the shape of the name, which is closed-class in East Asia (a Chinese family
// name of the commonest hundred and one or two characters; a Japanese family name of the
// commonest two hundred, or two of their characters, and a given name ending in a character
// given names end in; a Korean family syllable and two more), and its place in the sentence:
// a chat speaker at the start of a line, a role noun before it ("记者王小明", "담당자 임수진"),
// a verb of speech after it ("张伟说", "สมศักดิ์ ทองดี กล่าวว่า", "דוד כהן אמר") or before it
// ("قال أحمد الخطيب إن"), a particle or a role after a Japanese full name ("の山田健一容疑者",
// "藤原健二が"), an age in brackets ("김민수(42)"), a list after "出席：". Every rule reads at
// most 150 bytes before the name, so that SafePrefix's window (scriptInert) decides it.

// runBack is how far before a name the rules may look (scriptInert's window is 160 bytes).
const runBack = 150

// runNames appends the names found by the rules above; scriptNames calls it last.
func runNames(text string, out []Entity) []Entity {
	for ls := 0; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += ls
		}
		if hasHighByte(text[ls:le]) {
			out = runLine(text, ls, le, out)
		}
		ls = le + 1
	}
	return out
}

// sentenceLike reports whether the start of a chat message reads as a sentence: it has
// sentence punctuation, hiragana, or two words.
func sentenceLike(m string) bool {
	if strings.ContainsAny(m, "，。、？！?!.,") {
		return true
	}
	for _, r := range m {
		if r >= 0x3041 && r <= 0x309F {
			return true
		}
	}
	m = strings.TrimSpace(m)
	k := strings.IndexByte(m, ' ')
	return k > 0 && strings.TrimSpace(m[k:]) != ""
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); {
		if isLetterAt(s, i) {
			return true
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return false
}

func hasHighByte(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 { // eight bytes at a time while they are all ASCII
		if (uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56)&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0xCD {
			return true
		}
	}
	return false
}

func runEmit(out []Entity, s, e int) []Entity {
	return append(out, Entity{Type: TypePerson, Start: s, End: e, Score: nameStrongFloor + nameContextBoost})
}

// runLine applies the rules to the line text[ls:le].
func runLine(text string, ls, le int, out []Entity) []Entity {
	// a chat speaker: "[10:02] 小林: ...", "刘洋：...", "이지은: ...", "09:12 สมศรี วงศ์สวัสดิ์: ..."
	p, stamped := skipStamp(text, ls, le)
	if se := speakerEnd(text, p, le, stamped); se > 0 {
		out = runEmit(out, p, se)
	}
	out = kanaReadings(text, ls, le, out)
	out = thaiLabelNames(text, ls, le, out)
	for i := ls; i < le; {
		r, n := utf8.DecodeRuneInString(text[i:])
		c := classOf(r)
		switch c {
		case scHan:
			e := i
			for e < le {
				k, m := classAt(text, e)
				if k != scHan && k != scKana {
					break
				}
				e += m
			}
			out = hanRunNames(text, ls, i, e, out)
			i = e
			continue
		case scHangul:
			we := scriptWordEnd(text, i, scHangul)
			if k, _ := classBefore(text, i); k != scHangul {
				if e := koreanRunName(text, i, we); e > 0 {
					out = runEmit(out, i, e)
				}
			}
			i = we
			continue
		case scThai, scArabic, scHebrew:
			we := scriptWordEnd(text, i, c)
			if k, _ := classBefore(text, i); k != c {
				var s, e int = -1, -1
				switch c {
				case scThai:
					s, e = thaiSpeechName(text, ls, i, we)
				case scArabic:
					s, e = arabicSpeechName(text, i, we, le)
				case scHebrew:
					s, e = hebrewRunName(text, ls, i, we, le)
				}
				if e > s && s >= 0 {
					out = runEmit(out, s, e)
				}
			}
			i = we
			continue
		}
		i += n
	}
	return out
}

// skipStamp skips a time stamp that starts a chat line: "[10:02] ", "09:12 ", "[2026-11-23 09:12] ".
func skipStamp(text string, ls, le int) (int, bool) {
	p := ls
	br := p < le && text[p] == '['
	if br {
		p++
		for _, w := range [...]string{"오전 ", "오후 ", "上午", "下午", "AM ", "PM "} { // "[오후 3:12]"
			if strings.HasPrefix(text[p:le], w) {
				p += len(w)
				break
			}
		}
	}
	q := p
	for q < le && (isDigit(text[q]) || text[q] == ':' || text[q] == '-' || text[q] == '.' || text[q] == '/' || text[q] == ' ' && q > p && isDigit(text[q-1]) && q+1 < le && isDigit(text[q+1])) {
		q++
	}
	if q-p < 4 || !strings.Contains(text[p:q], ":") {
		return ls, false
	}
	if br {
		if q >= le || text[q] != ']' {
			return ls, false
		}
		q++
	}
	if q >= le || text[q] != ' ' {
		return ls, false
	}
	return q + 1, true
}

// speakerEnd returns the end of a chat speaker's name at p, before ':' or '：' and a message,
// or -1: a Chinese, Japanese or Korean name of its closed-class shape, or Thai words after a
// time stamp. The message must not be a value (digits, a phone number) and, without a time
// stamp, must read as a sentence.
func speakerEnd(text string, p, le int, stamped bool) int {
	if p >= le {
		return -1
	}
	colon := -1
	for k := p; k < le && k-p < 90; {
		if text[k] == ':' {
			colon = k
			break
		}
		if strings.HasPrefix(text[k:], "：") {
			colon = k
			break
		}
		_, n := utf8.DecodeRuneInString(text[k:])
		k += n
	}
	if colon <= p {
		return -1
	}
	name := text[p:colon]
	ms := colon + 1
	if text[colon] != ':' {
		ms = colon + len("：")
	}
	for ms < le && text[ms] == ' ' {
		ms++
	}
	// The message is judged by its first two words only, so that SafePrefix's window (two
	// words after the name's) decides the same.
	me := ms
	for n := 0; n < 2 && me < le; n++ {
		for me < le && text[me] == ' ' {
			me++
		}
		for me < le && text[me] != ' ' {
			me++
		}
	}
	if ms >= le || text[ms] == '+' || me-ms < 4 || !hasLetter(text[ms:me]) || digitsAt(text, ms)-ms >= 3 {
		return -1 // a value ("연락처: 010-..."), not a message
	}
	r, _ := utf8.DecodeRuneInString(name)
	if !stamped && !sentenceLike(text[ms:me]) {
		return -1 // a form's value ("高铁：G123"), not a chat message
	}
	switch classOf(r) {
	case scHan:
		if zhName(name) || jpFamily(name) == len(name) || jpSpacedName(name) {
			return colon
		}
	case scHangul:
		if koName(name) {
			return colon
		}
	case scThai:
		if stamped && thaiNameWords(name) {
			return colon
		}
	}
	return -1
}

// ---- Chinese and Japanese ----

// zhVeto are common words that begin with a family-name character ("周末", "马上", "许多").
var zhVeto = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`周末 周一 周二 周三 周四 周五 周六 周日 周期 周围 周年 马上 马路 许多 许可 任何 任务
		任职 金额 金融 黄金 方式 方法 方面 方案 方便 方向 高度 高级 高兴 高速 高新 高层 高管 程度 程序 付款
		付费 于是 安全 安排 王国 王府 林业 石油 石头 白天 白色 史上 钱包 严重 武器 段落 雷达 龙头 毛病 向上
		向下 罗马 夏天 夏季 叶子 宋体 唐朝 江苏 江西 江南 黄河 黄山 黄色 曾经 余额 余下 范围 谢谢 董事 董事长
		顾客 顾问 孙子 何时 何处 何况 田地 陆续 苏州 徐州 郑州 武汉 韩国 钟头 胡同 杨树 陈述 李子 张家界 汤圆
		邓小平 丁香 万元 万一 毛巾 贺卡 龙虾 严格 孟买 秦朝 姚明 常常 于此 林荫 沈阳 冯氏 熊猫 朱红 马克
		石家庄 金华 高雄 林芝 梁山 潘家园 邱比特 吴哥 魏晋 包括`) {
		zhVeto[w] = true
	}
	for _, w := range strings.Fields(`会员 收银员 收货人 收件人 同行者 出席者 参加者 紹介者 受付 担当者 記入者 发件人 寄件人 联系人 操作员 经手人 审核人 制单人 营业员 导购 司机 店员 业务员`) {
		if _, ok := cjkLabels[w]; !ok {
			cjkLabels[w] = false
		}
	}
	for _, w := range strings.Fields(`同行者 紹介者 受付 担当者 記入者`) {
		cjkLabels[w] = true
	}
	for _, w := range strings.Split(`받는 분|받는 사람|받는분|수령인|수취인|추천인|보낸 사람|주문자|예금주|작성자|보호자`, "|") {
		scriptCues[scHangul][w] = cueLabel
	}
	for _, w := range strings.Fields(`佐藤 鈴木 高橋 田中 伊藤 渡辺 山本 中村 小林 加藤 吉田 山田 佐々木 山口 松本 井上 木村 斎藤
		清水 山崎 池田 橋本 阿部 石川 山下 中島 石井 小川 前田 岡田 長谷川 藤田 後藤 近藤 村上 遠藤 青木 坂本
		斉藤 福田 太田 西村 藤井 金子 岡本 藤原 中野 三浦 原田 中川 松田 竹内 小野 田村 中山 和田 石田 森田
		上田 内田 柴田 酒井 宮崎 横山 高木 安藤 宮本 大野 小島 谷口 今井 工藤 高田 増田 丸山 杉山 村田 大塚
		新井 小山 平野 藤本 河野 上野 野口 武田 松井 千葉 岩崎 菅原 木下 久保 佐野 野村 松尾 市川 菊地 杉本
		古川 大西 島田 水野 桜井 高野 渡部 吉川 山内 西田 飯田 菊池 西川 小松 北村 安田 五十嵐 川口 平田 中田
		久保田 服部 岩田 土屋 川崎 福島 本田 樋口 秋山 田口 永井 山中 中西 吉村 川上 石原 大橋 松岡 馬場 浜田
		森本 星野 矢野 浅野 大久保 松下 小池 森下 荒木 松村 宮田 内藤 片山 北川 飯塚 平井 大谷 奥村 岩本 河合
		小西 熊谷 細川 小田 根本 稲垣 今村 堀内 梅田 森川 松永 早川 田辺 渡邊 渡邉 齋藤 齊藤 髙橋 佐久間 野田
		黒田 宮下 関口 辻本 千田 村井 西山 東山 北野 南 栗原 相川 望月 土井 菅野 古田 岸本 大川 小沢 戸田`) {
		jpSurnames[w] = true
		for _, r := range w {
			jpSurnameKanji[r] = true
		}
	}
	for _, r := range `一二三四五郎太介助輔夫雄男彦樹人也哉平吾朗司史志明治和博隆浩弘宏誠学亮翔斗真輝蓮悠陽翼子美恵香奈菜代枝江世乃花咲希紀里理絵衣織音佳穂実結愛葵彩優瞳薫茜健直信勇清正孝秀勝智修剛敏進豊聡恭康昭晃純哲徹悟慎拓蒼湊颯陸舞唯凛遥楓琴桃萌雪梨次蔵馬典久昌晴良保栄光徳文武満茂伸仁大毅俊敦篤靖稔淳潤啓圭彰章順晶遼航海碧喜貴裕祐佑雅麻沙紗帆華依羽心夢` {
		jpGivenEnd[r] = true
	}
}

var (
	jpSurnames     = map[string]bool{}
	jpSurnameKanji = map[rune]bool{}
	jpGivenEnd     = map[rune]bool{}
)

// jpGivenVeto are words a Japanese family name may precede that are no given names.
var jpGivenVeto = map[string]bool{"大学": true, "学院": true, "中学": true, "小学": true, "高校": true,
	"大会": true, "本部": true, "支店": true, "本店": true, "商店": true, "文化": true, "会館": true,
	"工業": true, "産業": true, "電機": true, "製作": true, "建設": true, "病院": true, "医院": true,
	"公園": true, "神社": true, "寺": true, "町": true, "駅": true, "線": true, "区": true, "市": true,
	"美術": true, "記念": true, "温泉": true, "大橋": true, "商事": true, "物産": true, "食品": true,
	"観光": true, "証券": true, "工務店": true, "酒造": true, "製菓": true,
	"自動車": true, "交通": true, "運輸": true, "新聞": true, "出版": true, "保険": true, "生命": true}

// zhName reports whether w is a Chinese name: a family name of the closed class and one or two
// characters (two or three after a double family name), not a common word.
func zhName(w string) bool {
	n := runeCount(w)
	if n < 2 || n > 4 || zhVeto[w] || !hanSurnameAt(w, 0) {
		return false
	}
	for _, r := range w {
		if !isHan(r) {
			return false
		}
	}
	if n == 4 {
		_, k := utf8.DecodeRuneInString(w)
		return hanSurnames[w[:2*k]]
	}
	for v := range zhVeto {
		if strings.HasPrefix(w, v) {
			return false
		}
	}
	return true
}

// jpFamily returns the length in bytes of a Japanese family name at the start of w: one of
// the commonest, or two characters of theirs; or -1.
func jpFamily(w string) int {
	best := -1
	for _, l := range [...]int{9, 6} { // three or two characters
		if len(w) >= l && jpSurnames[w[:l]] {
			best = max(best, l)
		}
	}
	if best > 0 {
		return best
	}
	r1, n1 := utf8.DecodeRuneInString(w)
	if n1 < len(w) {
		r2, n2 := utf8.DecodeRuneInString(w[n1:])
		if jpSurnameKanji[r1] && jpSurnameKanji[r2] && isHan(r1) && isHan(r2) {
			return n1 + n2
		}
	}
	return -1
}

// jpFullName reports whether w is a Japanese family name followed by a given name of one to
// three kanji that ends in a character given names end in ("山田健一", "中島美代子").
func jpFullName(w string) bool {
	f := jpFamily(w)
	if f <= 0 || f >= len(w) {
		return false
	}
	return jpNameParts(w[:f], w[f:])
}

// jpSpacedName reports whether w is a Japanese family and given name with one space between
// them ("森田 優子", "佐々木 美咲"), or a full name without one.
func jpSpacedName(w string) bool {
	f, g, ok := strings.Cut(w, " ")
	if !ok {
		f, g, ok = strings.Cut(w, "\u3000")
	}
	if !ok {
		return jpFullName(w)
	}
	return jpNameParts(f, g)
}

// jpNameParts reports whether f is a Japanese family name and g a given name of one to three
// kanji that ends in a character given names end in.
func jpNameParts(f, g string) bool {
	if jpFamily(f) != len(f) {
		return false
	}
	w := f
	n := runeCount(g)
	if n < 1 || n > 3 || jpGivenVeto[g] {
		return false
	}
	for _, r := range g {
		if !isHan(r) {
			return false
		}
	}
	last, _ := utf8.DecodeLastRuneInString(g)
	if !jpGivenEnd[last] {
		return false
	}
	// two characters of the family-name set and a one-character given name are as often a
	// place ("大島" + "町"): a listed family name then
	return n > 1 || jpSurnames[w]
}

// jpRoles follow a Japanese name in news and business text ("山田健一容疑者", "田中部長").
var jpRoles = []string{"容疑者", "被告", "被告人", "議員", "選手", "監督", "記者", "代表", "会長",
	"社長", "部長", "課長", "係長", "教授", "弁護士", "医師", "投手", "容疑", "受刑者", "原告", "知事", "市長"}

// jpAfter are the hiragana particles and phrases that may follow a name.
var jpAfter = []string{"は", "が", "を", "に", "の", "も", "と", "まで", "から", "へ", "で", "や", "です", "でございます", "より"}

// zhRolesBefore are role nouns written before a Chinese name ("记者王小明", "发言人付凌晖").
var zhRolesBefore = []string{"新闻发言人", "发言人", "记者", "主持人", "总经理", "董事长", "经理", "主任",
	"教授", "医生", "律师", "老师", "员工", "同事", "工程师", "总裁", "局长", "市长", "部长", "校长",
	"院长", "秘书", "助理", "店长", "司机", "主管", "会员", "客户", "选手", "队长", "通讯员", "作者", "编辑",
	"护士长", "班主任", "护士", "同学", "牧师", "牧師"}

// zhVerbs follow a Chinese name: verbs of speech and of taking part.
var zhVerbs = []string{"说", "表示", "介绍", "建议", "认为", "指出", "报道", "称", "强调", "透露", "告诉",
	"提出", "回答", "补充", "解释", "坦言", "承认", "宣布", "回忆", "笑道", "问道", "答道", "也来", "也去",
	"也参加", "负责", "主持", "发言", "指出", "提到", "讲", "问"}

// zhListCues introduce a list of people ("出席：周伟、吴芳").
var zhListCues = []string{"出席", "出席人员", "参会人员", "与会人员", "参加人员", "参加者", "抄送", "成员", "列席", "缺席"}

// hanRunNames finds names in the run of Han and kana text[s:e] on the line starting at ls.
func hanRunNames(text string, ls, s, e int, out []Entity) []Entity {
	// Japanese: a Han stretch after the run's start or a hiragana particle
	for p := s; p < e; {
		r, n := utf8.DecodeRuneInString(text[p:])
		if !isHan(r) {
			p += n
			continue
		}
		q := p
		for q < e {
			r2, m := utf8.DecodeRuneInString(text[q:])
			if !isHan(r2) {
				break
			}
			q += m
		}
		if k, st := classBefore(text, p); k != scHan && (k != scKana || !isKatakana(text, st)) {
			out = jpStretchNames(text, p, q, e, out)
		}
		p = q
	}
	// Chinese: a role noun before the name, a verb after it, a list, a salutation
	for i := s; i < e; {
		_, n := utf8.DecodeRuneInString(text[i:])
		if i == s || zhBoundaryBefore(text, s, i) {
			if ne := zhNameAt(text, ls, s, i, e); ne > 0 {
				out = runEmit(out, i, ne)
				i = ne
				continue
			}
		}
		i += n
	}
	return out
}

// jpStretchNames finds a Japanese name at the start of the Han stretch text[p:q] (in a run
// ending at e): a full name with a role, particle or title after it ("山田健一容疑者",
// "藤原健二が"), a family name alone with a role after it, after a role noun and の ("担当の小林"),
// before a self-introduction ("の高橋でございます") or when the full name came just before
// ("藤原まで"), and a family and given name separated by a space ("田中 一郎様").
func jpStretchNames(text string, p, q, e int, out []Entity) []Entity {
	ne := q
	for _, r := range jpRoles {
		if strings.HasSuffix(text[p:ne], r) && ne-len(r) > p {
			ne -= len(r)
			break
		}
	}
	for _, t := range cjkTitles {
		if t.japanese && strings.HasSuffix(text[p:ne], t.t) && ne-len(t.t) > p {
			ne -= len(t.t)
			break
		}
	}
	name := text[p:ne]
	if jpFullName(name) && jpAfterOK(text, ne, e) {
		return runEmit(out, p, ne)
	}
	if f := jpFamily(name); f == len(name) {
		roleAfter := ne < q && hasRoleAt(text, ne)
		intro := false
		for _, x := range [...]string{"です", "でございます", "と申します", "（", "("} {
			if strings.HasPrefix(text[ne:], x) {
				intro = true
			}
		}
		roleBefore := false
		for _, x := range [...]string{"担当の", "弊社の", "当社の", "営業の", "担当者の", "秘書の", "部の", "課の"} {
			if strings.HasSuffix(text[:p], x) {
				roleBefore = true
			}
		}
		if jpSurnames[name] && (roleAfter || intro && (roleBefore || strings.HasSuffix(text[:p], "の")) || roleBefore && jpAfterOK(text, ne, e)) ||
			jpAfterOK(text, ne, e) && jpSeenFull(text, p, name) {
			return runEmit(out, p, ne)
		}
	}
	// "田中 一郎様", "森田 優子": a space between family and given name
	if ne == q && q == e && e+1 < len(text) && text[e] == ' ' && jpFamily(text[p:e]) == e-p {
		ge := e + 1
		for ge < len(text) {
			if jpTitleAt(text, ge) {
				break
			}
			r, n := utf8.DecodeRuneInString(text[ge:])
			if !isHan(r) {
				break
			}
			ge += n
		}
		if ge > e+1 && jpNameParts(text[p:e], text[e+1:ge]) && (ge == len(text) || jpTitleAt(text, ge) || strings.IndexByte("\n\r(,", text[ge]) >= 0 || strings.HasPrefix(text[ge:], "（") || strings.HasPrefix(text[ge:], "、")) {
			return runEmit(out, p, ge)
		}
	}
	return out
}

func jpTitleAt(text string, i int) bool {
	for _, t := range cjkTitles {
		if t.japanese && strings.HasPrefix(text[i:], t.t) {
			return true
		}
	}
	return hasRoleAt(text, i)
}

// jpAfterOK reports whether what follows a Japanese name at ne (within the run ending at e) is
// a particle, a role or title, or the end of the run.
func jpAfterOK(text string, ne, e int) bool {
	if ne == e {
		return true
	}
	if hasRoleAt(text, ne) {
		return true
	}
	if startsWithAny(text[ne:], jpAfter) {
		return true
	}
	for _, t := range cjkTitles {
		if t.japanese && strings.HasPrefix(text[ne:], t.t) {
			return true
		}
	}
	return false
}

func hasRoleAt(text string, i int) bool { return startsWithAny(text[i:], jpRoles) }

// jpSeenFull reports whether the family name w written at s was written as part of a full name
// in the runBack bytes before it ("藤原健二が担当 ... 藤原まで").
func jpSeenFull(text string, s int, w string) bool {
	lo := max(0, s-runBack)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo++
	}
	for k := lo; k < s; {
		j := strings.Index(text[k:s], w)
		if j < 0 {
			return false
		}
		j += k
		ge := j + len(w)
		for ge < s {
			r, n := utf8.DecodeRuneInString(text[ge:])
			if !isHan(r) {
				break
			}
			ge += n
		}
		if ge > j+len(w) && jpFullName(text[j:ge]) {
			return true
		}
		k = j + len(w)
	}
	return false
}

// zhBoundaryBefore reports whether a Chinese name may start at i inside the run starting at s:
// after a role noun, a list cue, a salutation or a boundary character.
func zhBoundaryBefore(text string, s, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	if strings.ContainsRune(cjkBoundary, r) {
		return true
	}
	return zhRoleBefore(text, s, i) || zhSaluteBefore(text, s, i)
}

// zhRoleBefore reports whether a role noun of zhRolesBefore ends at i in the run starting at s.
func zhRoleBefore(text string, s, i int) bool {
	for _, p := range zhRolesBefore {
		if strings.HasSuffix(text[s:i], p) {
			return true
		}
	}
	return false
}

// zhSaluteBefore reports whether a salutation ("尊敬的", "亲爱的") ends at i in the run starting at s.
func zhSaluteBefore(text string, s, i int) bool {
	return strings.HasSuffix(text[s:i], "尊敬的") || strings.HasSuffix(text[s:i], "亲爱的")
}

// zhNameAt returns the end of a Chinese name at i in the run text[s:e], or -1: after a role
// noun, the name runs to the run's end or to a verb; elsewhere a verb of speech must follow.
func zhNameAt(text string, ls, s, i, e int) int {
	if !hanSurnameAt(text, i) {
		return -1
	}
	role := zhRoleBefore(text, s, i)
	salute := zhSaluteBefore(text, s, i)
	list := zhListItem(text, ls, i)
	for _, gl := range [...]int{2, 1, 3} {
		ne := i
		ok := true
		for m := 0; m < gl+1; m++ {
			if ne >= e {
				ok = false
				break
			}
			r, n := utf8.DecodeRuneInString(text[ne:])
			if !isHan(r) {
				ok = false
				break
			}
			ne += n
		}
		if !ok || gl == 3 && !hanSurnames[text[i:i+6]] {
			continue
		}
		if !zhName(text[i:ne]) {
			continue
		}
		atEnd := ne == e
		verb := zhVerbAfterRun(text, ne)
		switch {
		case verb && (i == s || role || zhBoundaryBefore(text, s, i)):
			return ne
		case atEnd && (role || list || salute || i == s && zhRunStandsAlone(text, s, e)):
			if atEnd && i == s && !role && !list && !salute && !zhVerbAfterRun(text, e) {
				continue
			}
			return ne
		}
	}
	return -1
}

// zhRunStandsAlone reports whether the run text[s:e] stands between punctuation.
func zhRunStandsAlone(text string, s, e int) bool {
	r, _ := utf8.DecodeLastRuneInString(text[:s])
	return s == 0 || strings.ContainsRune("，。、；：“”「」（）() \n", r)
}

// zhVerbAfterRun reports whether a verb of speech starts right after the run (after digits of a
// date: "付凌晖24日表示" is the role noun's case).
func zhVerbAfterRun(text string, e int) bool { return startsWithAny(text[e:], zhVerbs) }

// zhListItem reports whether i starts an item of a list of people on its line ("出席：周伟、吴芳、").
func zhListItem(text string, ls, i int) bool {
	if i-ls > runBack {
		return false
	}
	line := text[ls:i]
	for _, c := range zhListCues {
		for _, sep := range [...]string{"：", ":"} {
			k := strings.Index(line, c+sep)
			if k < 0 {
				continue
			}
			rest := line[k+len(c)+len(sep):]
			rest = strings.TrimLeft(rest, " ")
			if rest == "" || strings.HasSuffix(rest, "、") || strings.HasSuffix(rest, "，") || strings.HasSuffix(rest, ", ") {
				return true
			}
		}
	}
	return false
}

// ---- Korean ----

// koVeto are three-syllable words that begin with a family syllable: labels and common nouns.
var koVeto = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`연락처 배송지 신청인 추천인 예약자 이메일 도착지 소재지 휴대폰 결제일 주문자 수령인 수취인
		구매자 판매자 작성일 등록일 출발지 목적지 신청일 진료과 처방전 영업일 고객명 상품명 박물관 강남구 이마트
		한국어 전세계 조선일보 서울시 정부는 정부가 최고의 이번주 이번에 이사회 김치찌개 김포공항 주식회사 우리는
		구청장 시청역 도서관 백화점 유치원 고등학교 대학교 문화재 기자회견 전화번호 주민번호 생년월일 오늘은 내일은
		어제는 모두가 정말로 이렇게 그래서 하지만 그리고 이제는 우리가 여러분 남편이 남자가 여자가 아이가 부모님
		선생님 사장님 이분이 지금은 지난주 다음주 이번달 안녕하 감사합 고맙습 신청서 계약서 견적서 영수증 주문서
		제목은 내용은 장소는 일시는 비용은 금액은 방법은`) {
		koVeto[w] = true
	}
}

// koName reports whether w is a Korean name of three syllables (a family syllable and two).
func koName(w string) bool {
	return runeCount(w) == 3 && koreanNameWord(w) && !koVeto[w]
}

// koRolesBefore are nouns written before a Korean name without a colon ("담당자 임수진에게").
var koRolesBefore = []string{"담당자", "추천인", "신청인", "수령인", "대표", "기자", "보호자", "작성자", "상담원", "매니저", "팀장", "과장", "부장", "대리", "사원", "교수",
	"신랑", "신부", "혼주:", "소장", "지도교사", "교사", "선발", "대타", "마무리", "반", "·"}

// koreanRunName returns the end of a Korean name at the word text[s:we], or -1: with an age in
// brackets after it ("김민수(42)"), or after a role noun ("담당자 임수진에게").
func koreanRunName(text string, s, we int) int {
	w := text[s:we]
	// a closing after the name: "김민준 드림", "박지훈 올림"
	if koName(w) && (strings.HasPrefix(text[we:], " 드림") || strings.HasPrefix(text[we:], " 올림")) {
		if e := we + len(" 드림"); e == len(text) || text[e] == '\n' || text[e] == '\r' || text[e] == ' ' {
			return we
		}
	}
	if koName(w) && strings.HasPrefix(text[we:], "(") {
		if d := digitsAt(text, we+1); d > we+1 && d-we-1 <= 3 && d < len(text) && text[d] == ')' {
			return we
		}
	}
	base, _ := trimKoreanSuffix(w, koreanParticles)
	if !koName(base) {
		if !koName(w) {
			return -1
		}
		base = w
	}
	j := s - 1
	if j <= 0 || text[j] != ' ' {
		return -1
	}
	for _, r := range koRolesBefore {
		if strings.HasSuffix(text[:j], r) {
			if k, _ := classBefore(text, j-len(r)); k != scHangul {
				return s + len(base)
			}
		}
	}
	return -1
}

// ---- Thai, Arabic, Hebrew ----

// thaiSpeechVerbs follow a Thai name in news ("สมศักดิ์ ทองดี กล่าวว่า").
var thaiSpeechVerbs = []string{"กล่าวว่า", "ระบุว่า", "เปิดเผยว่า", "บอกว่า", "ให้สัมภาษณ์ว่า", "เล่าว่า", "ยืนยันว่า", "ชี้แจงว่า"}

// thaiRoleParts are parts of Thai role, office and place words that no name contains.
var thaiRoleParts = []string{"ผู้", "นายก", "รัฐ", "กระทรวง", "บริษัท", "จังหวัด", "โฆษก", "ตำรวจ",
	"เจ้าหน้าที่", "ประธาน", "อธิบดี", "รัฐมนตรี", "กรม", "สำนัก", "ชาวบ้าน", "ประชาชน", "นักข่าว", "ร้าน", "สาขา", "ทีม"}

// thaiGlued are words written without a space before a name ("ส่วนมาลี", "และสมชาย").
var thaiGlued = []string{"ส่วน", "และ", "โดย", "ขณะที่"}

// thaiNameWords reports whether w is one or two Thai words of a name's length.
func thaiNameWords(w string) bool {
	first, rest, two := strings.Cut(w, " ")
	if strings.IndexByte(rest, ' ') >= 0 {
		return false
	}
	for k, p := range [2]string{first, rest} {
		if k == 1 && !two {
			break
		}
		if n := runeCount(p); n < 2 || n > 20 || thaiStops[p] {
			return false
		}
		for _, x := range thaiRoleParts {
			if strings.Contains(p, x) {
				return false
			}
		}
		for _, r := range p {
			if classOf(r) != scThai {
				return false
			}
		}
	}
	return true
}

// thaiSpeechName returns a Thai given and family name before a verb of speech, starting at the
// Thai word text[i:we], or (-1, -1); the first word may carry a conjunction glued to it.
func thaiSpeechName(text string, ls, i, we int) (int, int) {
	if we+1 >= len(text) || text[we] != ' ' {
		return -1, -1
	}
	f := we + 1
	if k, _ := classAt(text, f); k != scThai {
		return -1, -1
	}
	fe := scriptWordEnd(text, f, scThai)
	if fe+1 >= len(text) || text[fe] != ' ' {
		return -1, -1
	}
	if !startsWithAny(text[fe+1:], thaiSpeechVerbs) {
		return -1, -1
	}
	s := i
	for _, g := range thaiGlued {
		if strings.HasPrefix(text[i:we], g) && we-i > len(g)+3 {
			s = i + len(g)
			break
		}
	}
	if !thaiNameWords(text[s:we]) || !thaiNameWords(text[f:fe]) {
		return -1, -1
	}
	for _, t := range thaiTitles {
		if strings.HasPrefix(text[s:we], t) {
			return -1, -1 // script.go's rule
		}
	}
	return s, fe
}

// arabicSpeechVerbs come before a name in Arabic news ("قال أحمد الخطيب إن").
var arabicSpeechVerbs = map[string]bool{"قال": true, "قالت": true, "وقال": true, "وقالت": true,
	"أضاف": true, "أضافت": true, "وأضاف": true, "وأضافت": true, "أكد": true, "أكدت": true,
	"وأكد": true, "وأكدت": true, "أوضح": true, "أوضحت": true, "وأوضح": true, "وأوضحت": true,
	"صرح": true, "صرحت": true, "ذكر": true, "ذكرت": true, "أشار": true, "أشارت": true,
	"وأشار": true, "وأشارت": true, "يسكن": true, "تسكن": true}

// arabicAfterName follow the name after a verb of speech.
var arabicAfterName = map[string]bool{"إن": true, "أن": true, "أنه": true, "أنها": true, "في": true}

// arabicRoles are offices named in place of a person after a verb of speech.
var arabicRoles = map[string]bool{"رئيس": true, "وزير": true, "مدير": true, "مسؤول": true, "ممثل": true,
	"عضو": true, "نائب": true, "محافظ": true, "سفير": true, "أمين": true, "قائد": true, "متحدث": true,
	"مصدر": true, "الرئيس": true, "الوزير": true, "المدير": true, "المتحدث": true, "الناطق": true,
	"بيان": true, "تقرير": true, "مصادر": true, "شهود": true}

// arabicNameLinks join a name's words ("عبد الرحمن", "أبو بكر").
var arabicNameLinks = map[string]bool{"عبد": true, "أبو": true, "بن": true, "ابن": true, "بنت": true}

// arabicSpeechName returns the two-word name after a verb of speech at the word text[i:we],
// when a complementiser, "في" or a comma follows it, or (-1, -1). Longer names ("عبد الرحمن")
// are left out: SafePrefix decides a word from the two words after it.
func arabicSpeechName(text string, i, we, le int) (int, int) {
	if !arabicSpeechVerbs[text[i:we]] || we+1 >= le || text[we] != ' ' {
		return -1, -1
	}
	s := we + 1
	if c, _ := classAt(text, s); c != scArabic {
		return -1, -1
	}
	e1 := scriptWordEnd(text, s, scArabic)
	w1 := text[s:e1]
	if e1+1 >= le || text[e1] != ' ' || arabicAfterName[w1] || scriptCues[scArabic][w1] != cueNone || arabicRoles[w1] || strings.HasPrefix(w1, "ال") || arabicNameLinks[w1] {
		return -1, -1 // "قال المتحدث ...", "قال رئيس الوزراء": a role, not a name
	}
	f := e1 + 1
	if c, _ := classAt(text, f); c != scArabic {
		return -1, -1
	}
	e2 := scriptWordEnd(text, f, scArabic)
	w2 := text[f:e2]
	if arabicAfterName[w2] || arabicRoles[w2] || arabicNameLinks[w2] {
		return -1, -1
	}
	if strings.HasPrefix(text[e2:], "،") || strings.HasPrefix(text[e2:], ",") {
		return s, e2
	}
	if e2+1 < le && text[e2] == ' ' {
		if c, _ := classAt(text, e2+1); c == scArabic && arabicAfterName[text[e2+1:scriptWordEnd(text, e2+1, scArabic)]] {
			return s, e2
		}
	}
	return -1, -1
}

// hebrewSpeechVerbs follow a name in Hebrew news ("דוד כהן אמר").
var hebrewSpeechVerbs = map[string]bool{"אמר": true, "אמרה": true, "הוסיף": true, "הוסיפה": true,
	"סיפר": true, "סיפרה": true, "ציין": true, "ציינה": true, "טען": true, "טענה": true,
	"הסביר": true, "הסבירה": true, "כתב": true, "כתבה": true, "הודיע": true, "הודיעה": true}

// hebrewRoles are offices named in place of a person before a verb of speech.
var hebrewRoles = map[string]bool{"ראש": true, "שר": true, "שרת": true, "דובר": true, "דוברת": true,
	"נשיא": true, "נשיאת": true, "מנהל": true, "מנהלת": true, "יו\"ר": true, "יו״ר": true,
	"מנכ\"ל": true, "מנכ״ל": true, "ראשת": true, "מפקד": true, "חבר": true, "חברת": true, "מקור": true}

// hebrewGroups are what a greeting addresses when it addresses no one person ("שלום לכולם,").
var hebrewGroups = map[string]bool{"לכולם": true, "לכם": true, "חברים": true, "חברות": true,
	"רב": true, "וברכה": true, "עולם": true, "צוות": true, "לך": true, "לכן": true}

// hebrewRunName returns a Hebrew name: two words before a verb of speech, at the start of a
// clause (the first may carry the conjunction ו), or one word after a greeting and before a
// comma ("שלום דני,"), or (-1, -1).
func hebrewRunName(text string, ls, i, we, le int) (int, int) {
	w := text[i:we]
	if (w == "שלום" || w == "היי" || w == "הי") && we+1 < le && text[we] == ' ' {
		n := we + 1
		if c, _ := classAt(text, n); c == scHebrew {
			ne := scriptWordEnd(text, n, scHebrew)
			if ne < le && text[ne] == ',' && runeCount(text[n:ne]) >= 2 && runeCount(text[n:ne]) <= 10 && !hebrewGroups[text[n:ne]] {
				return n, ne
			}
		}
		return -1, -1
	}
	if we+1 >= le || text[we] != ' ' {
		return -1, -1
	}
	f := we + 1
	if c, _ := classAt(text, f); c != scHebrew {
		return -1, -1
	}
	fe := scriptWordEnd(text, f, scHebrew)
	if fe+1 >= le || text[fe] != ' ' {
		return -1, -1
	}
	// "מאת נועה לוינסון <noa@...>": the sender of a quoted e-mail
	if w == "מאת" {
		if c, _ := classAt(text, fe+1); c == scHebrew {
			ge := scriptWordEnd(text, fe+1, scHebrew)
			if strings.HasPrefix(text[ge:], " <") {
				return f, ge
			}
		}
		if strings.HasPrefix(text[fe:], " <") {
			return f, fe
		}
		return -1, -1
	}
	v := scriptWordEnd(text, fe+1, scHebrew)
	if !hebrewSpeechVerbs[text[fe+1:v]] {
		return -1, -1
	}
	// the start of a clause: the line's start, after punctuation, or a glued ו
	s := i
	if strings.HasPrefix(w, "ו") && runeCount(w) >= 3 {
		s = i + len("ו")
	} else if b := skipSpacesBack(text, i); b > ls {
		r, _ := utf8.DecodeLastRuneInString(text[:b])
		if !strings.ContainsRune(".,;:!?\"״”", r) {
			return -1, -1
		}
	}
	if runeCount(text[s:we]) < 2 || runeCount(text[f:fe]) < 2 || scriptCues[scHebrew][text[s:we]] != cueNone ||
		hebrewRoles[text[s:we]] || strings.HasPrefix(text[f:fe], "ה") {
		return -1, -1 // "ראש הממשלה אמר", "דובר המשטרה אמר": an office
	}
	return s, fe
}

// kanaReadings finds the katakana reading in brackets after a Japanese name
// ("佐々木 美咲（ササキ ミサキ）"): two katakana words in "（...）" right after a full name.
func kanaReadings(text string, ls, le int, out []Entity) []Entity {
	for k := ls; k < le; {
		j := strings.Index(text[k:le], "（")
		if j < 0 {
			break
		}
		o := k + j + len("（")
		k = o
		c := strings.Index(text[o:min(le, o+64)], "）")
		if c < 0 || c > 60 {
			continue
		}
		in := text[o : o+c]
		p1, p2, cut := strings.Cut(in, " ")
		if !cut {
			p1, p2, cut = strings.Cut(in, "\u3000")
		}
		if !cut || p1 == "" || p2 == "" {
			continue
		}
		ok := true
		for _, p := range [2]string{p1, p2} {
			for i := 0; i < len(p); {
				if !isKatakana(p, i) {
					ok = false
					break
				}
				_, n := utf8.DecodeRuneInString(p[i:])
				i += n
			}
		}
		if !ok {
			continue
		}
		// the name before the bracket: family, maybe a space, given
		b := o - len("（")
		a := b
		for a > ls {
			r, n := utf8.DecodeLastRuneInString(text[:a])
			if classOf(r) != scHan && !(r == ' ' || r == '\u3000') {
				break
			}
			a -= n
		}
		for a < b && (text[a] == ' ' || strings.HasPrefix(text[a:], "\u3000")) {
			_, n := utf8.DecodeRuneInString(text[a:])
			a += n
		}
		if jpSpacedName(text[a:b]) {
			out = runEmit(out, o, o+c)
		}
	}
	return out
}

// thaiLabels are field labels before a Thai name; "ชื่อ " (name) without a colon, in chat,
// needs a polite particle after the name ("ชื่อ สมหญิง ใจดี ค่ะ").
var thaiLabels = []string{"ผู้รับ:", "ผู้ส่ง:", "ชื่อ:", "ชื่อ-นามสกุล:", "ชื่อผู้ติดต่อ:", "ผู้ติดต่อ:", "ชื่อลูกค้า:", "ชื่อ "}

var thaiPolite = []string{" ค่ะ", " ครับ", " คะ", " นะคะ", " นะครับ"}

// thaiLabelNames finds a given and family name after a Thai field label ("ผู้รับ: ประเสริฐ แก้วมณี").
func thaiLabelNames(text string, ls, le int, out []Entity) []Entity {
	for _, l := range thaiLabels {
		k := strings.Index(text[ls:le], l)
		if k < 0 {
			continue
		}
		s := ls + k + len(l)
		for s < le && text[s] == ' ' {
			s++
		}
		if c, _ := classAt(text, s); c != scThai {
			continue
		}
		for _, t := range thaiTitles {
			if strings.HasPrefix(text[s:], t) {
				s = -1
				break
			}
		}
		if s < 0 {
			continue
		}
		e := scriptWordEnd(text, s, scThai)
		if !thaiNameWords(text[s:e]) {
			continue
		}
		if e+1 < le && text[e] == ' ' {
			if c, _ := classAt(text, e+1); c == scThai {
				f := scriptWordEnd(text, e+1, scThai)
				if thaiNameWords(text[e+1 : f]) {
					e = f
				}
			}
		}
		if l == "ชื่อ " {
			polite := false
			for _, p := range thaiPolite {
				if strings.HasPrefix(text[e:], p) {
					polite = true
				}
			}
			if !polite {
				continue
			}
		}
		out = runEmit(out, s, e)
	}
	return out
}

// addrScriptStart reports whether the word text[t:u] may start an address in another script
// (addrworld.go) that is decided only words later: a Korean region, a Chinese province, a
// Japanese prefecture, an Arabic or Hebrew street word. SafePrefix holds such a word.
func addrScriptStart(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	for _, p := range addrStarts[r] {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// fieldWords follow a name in a Japanese or Chinese field and are no given name: "担当: 高橋 直通
// 090-...", "联系人：王伟 手机".
var fieldWords = []string{"直通", "携帯", "電話", "内線", "代表", "手机", "电话", "邮箱", "地址", "宛", "御中", "部長", "課長"}

func fieldWordAt(text string, i int) bool {
	for _, w := range fieldWords {
		if strings.HasPrefix(text[i:], w) {
			return true
		}
	}
	return false
}

// jpOneKanjiSurnames are the common family names of one kanji, taken after a Japanese field
// label ("担当：森").
var jpOneKanjiSurnames = map[string]bool{"林": true, "森": true, "原": true, "関": true, "堀": true,
	"辻": true, "東": true, "南": true, "西": true, "北": true, "泉": true, "岡": true, "島": true,
	"菅": true, "谷": true, "丸": true, "楠": true, "桜": true, "萩": true, "柳": true}
