package detect

import (
	"strings"
	"unicode/utf8"
)

// Space-aligned tables (manifests, payroll and class lists, dependent lists pasted from a
// report): the header cell above a value, in the same character columns, labels it, as the
// header of a delimited table does (columnHeader): "Dependent Name   DOB          SSN" over
// "Marisol Vega     09/22/1986   587 44 1026". Cells are separated by two or more spaces.

// alignedValueHeader returns the header cell above the cell text[start:end] of a space-aligned
// table, or "": the nearest line above, within columnMaxLines lines and columnMaxBytes bytes,
// whose cell in the same columns holds no digit (rows above hold values; the header holds
// words). Only text before the value's line end is read, so a stream knows it in time.
func alignedValueHeader(text string, start, end int) string {
	ls := start
	for ls > 0 && text[ls-1] != '\n' && start-ls < columnMaxBytes {
		ls--
	}
	if ls > 0 && text[ls-1] != '\n' || ls == 0 {
		return ""
	}
	if !cellEdgeBefore(text, ls, start) || !cellEdgeAfter(text, end) {
		return ""
	}
	c0 := utf8.RuneCountInString(text[ls:start])
	c1 := c0 + utf8.RuneCountInString(text[start:end])
	le := ls - 1 // the '\n' ending the line above
	for n := 0; n < columnMaxLines && le > 0 && start-le < columnMaxBytes; n++ {
		s := le
		for s > 0 && text[s-1] != '\n' {
			s--
		}
		line := text[s:le]
		if isBlank(line) {
			return ""
		}
		cell, ok := cellAt(line, c0, c1)
		if !ok {
			return "" // not a table line: the block has ended
		}
		if cell != "" && !hasDigit(cell) {
			if len(cell) > columnMaxCell {
				return ""
			}
			return cell
		}
		le = s - 1
	}
	return ""
}

// cellEdgeBefore reports whether a cell starts at s on the line starting at ls: at the line's
// start (after blanks) or after two spaces.
func cellEdgeBefore(text string, ls, s int) bool {
	return isBlank(text[ls:s]) || s-ls >= 2 && text[s-1] == ' ' && text[s-2] == ' '
}

// cellEdgeAfter reports whether a cell ends at e: at the line's end or before two spaces.
func cellEdgeAfter(text string, e int) bool {
	if e >= len(text) || text[e] == '\n' || text[e] == '\r' {
		return true
	}
	return e+1 < len(text) && text[e] == ' ' && (text[e+1] == ' ' || text[e+1] == '\n' || text[e+1] == '\r')
}

// cellAt returns the cell of a table line (cells separated by two or more spaces) that
// overlaps the character columns [c0, c1), "" when none does, and ok false when the line has no
// two-space gap or has a tab (not a space-aligned table line).
func cellAt(line string, c0, c1 int) (string, bool) {
	gap := false
	found := ""
	cs, cc, ce := -1, 0, 0 // the current cell: byte start, first column, byte end of its last word
	col := 0
	flush := func() {
		if cs >= 0 && found == "" && cc < c1 && col > c0 {
			found = line[cs:ce]
		}
		cs = -1
	}
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == '\t':
			return "", false
		case c == ' ' || c == '\r':
			if i+1 < len(line) && line[i+1] == ' ' {
				gap = true
				flush()
			}
			i++
			col++
			continue
		}
		if cs < 0 {
			cs, cc = i, col
		}
		_, n := utf8.DecodeRuneInString(line[i:])
		i += n
		col++
		ce = i
	}
	flush()
	return found, gap
}

// asciiDetect runs detect on text, or, when text holds full-width, Arabic-Indic or Persian
// digits or a no-break or thin space between digits (phonenorm.go), on an ASCII copy with the
// spans mapped back: "٤١١١ ١١١١ ١١١١ ١١١١", "１９８５年３月１２日", "SSN ٤١٢-٦٦-٠١٩٣". Text without them
// costs one pass and allocates nothing.
func asciiDetect(text string, out []Entity, detect func(string, []Entity) []Entity) []Entity {
	if !needsNorm(text) {
		return detect(text, out)
	}
	norm, at := phoneNormalise(text)
	n := len(out)
	out = detect(norm, out)
	for k := n; k < len(out); k++ {
		out[k].Start, out[k].End = at[out[k].Start], at[out[k].End]
	}
	return out
}

// needsNorm is needsPhoneNorm, starting at the first byte that can lead a rune it maps (found
// with strings.IndexByte, which is vectorised): most text has none, or few, of them.
func needsNorm(text string) bool {
	first := -1
	for _, c := range [...]byte{0xc2, 0xd9, 0xdb, 0xe2, 0xe3, 0xef} {
		if k := strings.IndexByte(text, c); k >= 0 && (first < 0 || k < first) {
			first = k
		}
	}
	return first >= 0 && needsPhoneNorm(text[max(0, first-1):])
}
