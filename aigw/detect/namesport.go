package detect

import "strings"

// Names known from the notation of cricket commentary and scorecards (detect13, study sets 12
// and 19). The notation is the evidence: only people bowl, bat, catch and stump, so the
// capitalised runs in these slots are names, whatever the words are:
//
//   - a ball line: over and ball number, bowler "to" batter, a comma ("18.3  Iyer to Haque, 2
//     runs", "32.1 Theekshana to Shanto, no run");
//   - a dismissal: the batter at the start of the line, then "c FIELDER b BOWLER", "c & b
//     BOWLER", "st KEEPER b BOWLER", "lbw b BOWLER" or "b BOWLER", then the runs ("Saiful Haque
//     c Shekhawat b Iyer 47");
//   - bowling figures: overs-maidens-runs-wickets after the bowler ("Iyer 4-0-29-2", "Bowling:
//     Rizvi 8-1-33-3, Siddiqui 6-0-27-1"), the run at the start of a line, a clause or a list
//     item.
//
// Runs are one to three capitalised words, none a known non-name ("Drinks", "Bowling"). The
// evidence is on the run's line; SafePrefix holds a run until its line has ended
// (sportPending).

// sportMaxLine bounds how far a line is read: the whole notation of one line is shorter.
const sportMaxLine = 160

// sportNames appends the names found in cricket notation in text to out.
func (d nameDetector) sportNames(text string, out []Entity) []Entity {
	for ls := 0; ls < len(text); {
		le := strings.IndexByte(text[ls:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += ls
		}
		if le-ls >= 6 && hasDigit(text[ls:min(le, ls+sportMaxLine)]) {
			out = d.sportLine(text[:min(le, ls+sportMaxLine)], ls, out)
		}
		ls = le + 1
	}
	return out
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

func sportEntity(s, e int) Entity {
	return Entity{Type: TypePerson, Start: s, End: e, Score: nameTitledFloor + nameContextBoost}
}

// sportLine finds the notation in the line text[ls:] (text ends at the line's end).
func (d nameDetector) sportLine(text string, ls int, out []Entity) []Entity {
	if p := overPrefix(text, ls); p > 0 {
		// "18.3  Iyer to Haque, 2 runs"
		if r1 := d.sportRun(text, p); r1 > 0 && strings.HasPrefix(text[r1:], " to ") {
			if r2 := d.sportRun(text, r1+4); r2 > 0 && r2 < len(text) && text[r2] == ',' {
				out = append(out, sportEntity(p, r1), sportEntity(r1+4, r2))
			}
		}
	}
	// dismissals: the batter starts the line or a sentence ("OUT, stumped! ... Mushfiqur Rahim
	// st Mendis b Theekshana 8"); at the start of a scorecard line any capitalised words
	// ("Danish Mirza  c & b Rizvi  0")
	if r0 := d.capRun(text, ls, true); r0 > 0 {
		out = d.dismissal(text, ls, r0, out)
	}
	for i := ls + 2; i+1 < len(text); i++ {
		if text[i-1] == ' ' && strings.IndexByte(".!?", text[i-2]) >= 0 && isUpper(text[i]) &&
			!(i >= 4 && text[i-2] == '.' && isUpper(text[i-3]) && !isLetterAt(text, i-4)) { // not after an initial
			if r0 := d.sportRun(text, i); r0 > 0 {
				out = d.dismissal(text, i, r0, out)
			}
		}
	}
	// bowling figures: "Rizvi 8-1-33-3"
	for i := ls + 1; i < len(text); i++ {
		if text[i-1] != ' ' || !isDigit(text[i]) || i > ls+1 && isDigit(text[i-2]) {
			continue
		}
		if !figures(text, i) {
			continue
		}
		if s := d.runEndingAt(text, ls, i-1); s >= 0 {
			out = append(out, sportEntity(s, i-1))
		}
	}
	return out
}

// overPrefix returns where the text after an over and ball number at the start of the line
// begins ("18.3  ", "32.1 "), or -1.
func overPrefix(text string, ls int) int {
	j := ls
	for j < len(text) && j < ls+4 && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	k := j
	for k < len(text) && isDigit(text[k]) && k-j < 3 {
		k++
	}
	if k == j || k+2 >= len(text) || text[k] != '.' || !isDigit(text[k+1]) {
		return -1
	}
	k += 2
	if k >= len(text) || text[k] != ' ' && text[k] != '\t' {
		return -1
	}
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	return k
}

// sportRun returns the end of one to three capitalised words joined by single spaces at k,
// none a known non-name, or -1.
func (d nameDetector) sportRun(text string, k int) int {
	return d.capRun(text, k, false)
}

// capRun is sportRun; anyWord allows known non-names too (a batter at the start of a
// scorecard line: "Danish Mirza").
func (d nameDetector) capRun(text string, k int, anyWord bool) int {
	end := -1
	for n := 0; n < 3; n++ {
		if k >= len(text) || !isLetterAt(text, k) {
			break
		}
		we := wordEnd(text, k)
		if we-k == 1 && isUpper(text[k]) && we+2 < len(text) && text[we] == '.' && text[we+1] == ' ' {
			k = we + 2 // an initial: "A. Brathwaite"
			continue
		}
		if !isCapWord(text[k:we]) || !anyWord && d.flags(text[k:we])&gzNotName != 0 || isTitle(text[k:we]) {
			break
		}
		end = we
		if k = space(text, we); k < 0 {
			break
		}
	}
	return end
}

// dismissal finds "c X b Y 47" and its forms after the batter text[ls:r0].
func (d nameDetector) dismissal(text string, ls, r0 int, out []Entity) []Entity {
	j := r0
	for j < len(text) && text[j] == ' ' {
		j++
	}
	if j == r0 {
		return out
	}
	var fs, fe int // the fielder or keeper, if any
	switch {
	case strings.HasPrefix(text[j:], "c & b "):
		j += 6
	case strings.HasPrefix(text[j:], "lbw b "):
		j += 6
	case strings.HasPrefix(text[j:], "b "):
		j += 2
	case strings.HasPrefix(text[j:], "c "), strings.HasPrefix(text[j:], "st "):
		j = strings.IndexByte(text[j:], ' ') + j + 1
		fs, fe = j, d.sportRun(text, j)
		if fe < 0 || !strings.HasPrefix(text[fe:], " b ") {
			return out
		}
		j = fe + 3
	default:
		return out
	}
	be := d.sportRun(text, j)
	if be < 0 {
		return out
	}
	k := be
	for k < len(text) && text[k] == ' ' {
		k++
	}
	if k == be || k >= len(text) || !isDigit(text[k]) {
		return out // the runs follow the bowler
	}
	out = append(out, sportEntity(ls, r0), sportEntity(j, be))
	if fe > 0 {
		out = append(out, sportEntity(fs, fe))
	}
	return out
}

// figures reports whether bowling figures start at i: overs (a ball count allowed), maidens,
// runs and wickets joined by '-', maidens at most the overs, wickets at most 10, and no digit or
// '-' after them ("8-1-33-3", "7.2-0-41-4").
func figures(text string, i int) bool {
	var v [4]int
	j := i
	for g := 0; g < 4; g++ {
		if g > 0 {
			if j >= len(text) || text[j] != '-' {
				return false
			}
			j++
		}
		k := j
		for k < len(text) && isDigit(text[k]) && k-j < 3 {
			v[g] = v[g]*10 + int(text[k]-'0')
			k++
		}
		if k == j || g != 2 && k-j > 2 {
			return false
		}
		j = k
		if g == 0 && j+1 < len(text) && text[j] == '.' && isDigit(text[j+1]) {
			j += 2
		}
	}
	return v[1] <= v[0] && v[0] <= 50 && v[3] <= 10 && (j == len(text) || !isDigit(text[j]) && text[j] != '-')
}

// runEndingAt returns the start of a run of one to three capitalised words that ends at e and
// starts a line, a clause or a list item ("Bowling: Rizvi", ", Siddiqui", ". Iyer"), or -1.
func (d nameDetector) runEndingAt(text string, ls, e int) int {
	s := -1
	for n, j := 0, e; n < 3; n++ {
		w := wordEndingAt(text, j)
		if w == "" || !isCapWord(w) || d.flags(w)&gzNotName != 0 || isTitle(w) {
			break
		}
		s = j - len(w)
		if s-1 <= ls || text[s-1] != ' ' {
			break
		}
		j = s - 1
	}
	if s < 0 || d.sportRun(text, s) != e {
		return -1
	}
	if s == ls {
		return s
	}
	for _, p := range []string{": ", ", ", ". ", "("} {
		if s-ls >= len(p) && text[s-len(p):s] == p {
			return s
		}
	}
	return -1
}

// sportPending reports whether the cricket notation of the capitalised run starting at cs may
// still make it a name when more text arrives: its line has not ended (within sportMaxLine
// bytes) and is a ball line, or what follows the run may still become a dismissal or figures.
func (d nameDetector) sportPending(text string, cs int) bool {
	if len(text)-cs > sportMaxLine || strings.IndexByte(text[cs:], '\n') >= 0 {
		return false
	}
	if overPrefix(text, lineStart(text, cs)) > 0 {
		return true
	}
	re := d.sportRun(text, cs)
	if re < 0 {
		return false
	}
	rest := strings.TrimLeft(text[re:], " ")
	if strings.Trim(rest, "0123456789.- ") == "" {
		return true // figures or runs may follow
	}
	for _, p := range []string{"c & b ", "lbw b ", "st ", "c ", "b "} {
		if strings.HasPrefix(rest, p) || strings.HasPrefix(p, rest) {
			return true
		}
	}
	return false
}

// sportNameAt reports whether the cricket notation of the complete line of cs makes a name
// start at cs, as sportNames finds it ("18.3  Iyer to Haque, 2 runs", "Danish Mirza  c & b
// Rizvi  0"): SafePrefix must hold it (found by TestSafePrefixProperty on set 19's texts).
func (d nameDetector) sportNameAt(text string, cs int) bool {
	k := strings.IndexByte(text[cs:min(len(text), cs+sportMaxLine)], '\n')
	if k < 0 {
		return false // not complete: sportPending decides
	}
	le := cs + k
	ls := cs
	for ls > 0 && text[ls-1] != '\n' && cs-ls < sportMaxLine {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' || le-ls < 6 || !hasDigit(text[ls:min(le, ls+sportMaxLine)]) {
		return false
	}
	var buf [8]Entity
	for _, x := range d.sportLine(text[:min(le, ls+sportMaxLine)], ls, buf[:0]) {
		if x.Start == cs {
			return true
		}
	}
	return false
}
