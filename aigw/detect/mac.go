package detect

// macDetector finds MAC addresses: six pairs of hex digits separated by ':' or '-'
// ("00:1A:2B:3C:4D:5E"), or three groups of four separated by '.' ("001a.2b3c.4d5e").
type macDetector struct{}

const (
	macScore       = 0.8
	macDigitsScore = 0.55 // "12-34-56-78-90-12": all decimal, often something else
)

var macContext = &contextRule{
	pos:     newKeywords("mac", "mac address", "hwaddr", "ether", "ethernet", "bssid", "hardware address", "physical address", "wifi", "wlan", "nic", "device"),
	neg:     newKeywords("serial", "sku", "part", "order", "version"),
	boost:   0.15,
	penalty: 0.3,
}

func (macDetector) Detect(text string, out []Entity) []Entity {
	for i := 0; i+14 <= len(text); i++ {
		if !isHex(text[i]) || (i > 0 && (isWordByte(text[i-1]) || text[i-1] == ':' || text[i-1] == '-' || text[i-1] == '.')) {
			continue
		}
		end, digitsOnly := macAt(text, i)
		if end < 0 {
			continue
		}
		score := macScore
		if digitsOnly {
			score = macDigitsScore
		}
		out = append(out, Entity{Type: TypeMAC, Start: i, End: end, Score: score})
		i = end - 1
	}
	return out
}

// macAt returns the end of a MAC address starting at i, or -1.
func macAt(text string, i int) (int, bool) {
	hexRun := func(j, n int) bool {
		if j+n > len(text) {
			return false
		}
		for k := j; k < j+n; k++ {
			if !isHex(text[k]) {
				return false
			}
		}
		return true
	}
	var end int
	switch sep := text[i+2]; {
	case (sep == ':' || sep == '-') && i+17 <= len(text):
		for g := 0; g < 6; g++ {
			j := i + g*3
			if !hexRun(j, 2) || (g < 5 && text[j+2] != sep) {
				return -1, false
			}
		}
		end = i + 17
		if end+1 < len(text) && text[end] == sep && isHex(text[end+1]) {
			return -1, false
		}
	case isHex(sep) && text[i+4] == '.':
		if !hexRun(i, 4) || text[i+9] != '.' || !hexRun(i+5, 4) || !hexRun(i+10, 4) {
			return -1, false
		}
		end = i + 14
		if end+1 < len(text) && text[end] == '.' && isHex(text[end+1]) {
			return -1, false
		}
	default:
		return -1, false
	}
	if end < len(text) && isWordByte(text[end]) {
		return -1, false
	}
	digitsOnly := true
	for k := i; k < end; k++ {
		if isAlpha(text[k]) {
			digitsOnly = false
		}
	}
	return end, digitsOnly
}
