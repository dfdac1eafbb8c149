package detect

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/nyaruka/phonenumbers"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// DefaultMinScore is the score below which entities are dropped when Options.MinScore is zero.
const DefaultMinScore = 0.5

// DefaultRegion is the phone region used when Options.DefaultRegion is empty.
const DefaultRegion = "US"

// Options configures an Engine.
type Options struct {
	// Types lists the entity types to detect (Type constants); nil or empty means all.
	Types []string
	// MinScore drops entities whose final score is below it; zero means DefaultMinScore.
	// Use a small positive value such as 0.01 to see every candidate.
	MinScore float64
	// DefaultRegion is the ISO 3166-1 alpha-2 region assumed for phone numbers written without
	// a leading "+"; empty means DefaultRegion.
	DefaultRegion string

	// nameModel replaces the embedded name model (tests measure generalisation with a model
	// trained without some name origins).
	nameModel *namemodel.Model
}

// registration ties a type to its detector and context words.
type registration struct {
	typ string
	new func(Options) Detector
	ctx *contextRule
}

// registry lists every detector in the order it runs, with the context words of its type.
var registry = []registration{
	{TypeEmail, func(Options) Detector { return emailDetector{} }, nil},
	{TypeURL, func(Options) Detector { return urlDetector{} }, nil},
	{TypeSecret, func(Options) Detector { return secretDetector{} }, secretContext},
	{TypeIBAN, func(Options) Detector { return ibanDetector{} }, ibanContext},
	{TypeCreditCard, func(Options) Detector { return cardDetector{} }, cardContext},
	{TypeSSN, func(Options) Detector { return ssnDetector{} }, ssnContext},
	{TypePhone, func(o Options) Detector { return phoneDetector{region: o.DefaultRegion} }, phoneContext},
	{TypeIP, func(Options) Detector { return ipDetector{} }, ipContext},
	{TypeMAC, func(Options) Detector { return macDetector{} }, macContext},
	{TypeDateOfBirth, func(Options) Detector { return dobDetector{} }, dobContext},
	{TypeStreetAddress, func(Options) Detector { return addressDetector{} }, addressContext},
	{TypePerson, func(o Options) Detector { return newNameDetector(o.nameModel) }, nil},
}

// Types returns every entity type the package detects, in registry order.
func Types() []string {
	ts := make([]string, len(registry))
	for i, r := range registry {
		ts[i] = r.typ
	}
	return ts
}

type engineDetector struct {
	det Detector
	ctx *contextRule
}

// Engine scans text for entities. It is safe for concurrent use.
type Engine struct {
	dets     []engineDetector
	minScore float64
	names    nameDetector // the name rules, also used by SafePrefix
	pool     sync.Pool    // *scratch
}

// scratch holds the per-scan buffers reused between scans.
type scratch struct {
	cands []Entity
	bits  []uint64
}

// New returns an Engine for opts.
func New(opts Options) (*Engine, error) {
	if opts.MinScore < 0 || opts.MinScore > 1 {
		return nil, fmt.Errorf("detect.New: MinScore %v outside [0, 1]", opts.MinScore)
	}
	if opts.MinScore == 0 {
		opts.MinScore = DefaultMinScore
	}
	if opts.DefaultRegion == "" {
		opts.DefaultRegion = DefaultRegion
	}
	if phonenumbers.GetCountryCodeForRegion(opts.DefaultRegion) == 0 {
		return nil, fmt.Errorf("detect.New: unknown phone region %q", opts.DefaultRegion)
	}
	want := map[string]bool{}
	for _, t := range opts.Types {
		if !slices.ContainsFunc(registry, func(r registration) bool { return r.typ == t }) {
			return nil, fmt.Errorf("detect.New: unknown type %q", t)
		}
		want[t] = true
	}
	e := &Engine{minScore: opts.MinScore, names: newNameDetector(opts.nameModel)}
	for _, r := range registry {
		if len(want) > 0 && !want[r.typ] {
			continue
		}
		e.dets = append(e.dets, engineDetector{det: r.new(opts), ctx: r.ctx})
	}
	e.pool.New = func() any { return &scratch{} }
	loadGazetteer()
	return e, nil
}

// Scan returns the entities in text, sorted by Start and not overlapping.
func (e *Engine) Scan(text string) []Entity {
	return e.AppendScan(nil, text)
}

// AppendScan appends the entities in text to dst, sorted by Start and not overlapping, and
// returns the extended slice. Passing a dst with spare capacity avoids allocating.
func (e *Engine) AppendScan(dst []Entity, text string) []Entity {
	s := e.pool.Get().(*scratch)
	defer e.pool.Put(s)
	cands := s.cands[:0]
	for _, d := range e.dets {
		n0 := len(cands)
		cands = d.det.Detect(text, cands)
		// Keep only valid spans above the threshold, with context applied.
		k := n0
		for _, c := range cands[n0:] {
			if c.Start < 0 || c.End > len(text) || c.Start >= c.End {
				continue
			}
			c.Score = d.ctx.apply(text, c.Start, c.End, c.Score)
			if d.ctx != nil && d.ctx.boost > 0 && c.Score < e.minScore && d.ctx.labelled(text, c.Start, c.End) {
				c.Score = min(c.Score+d.ctx.boost, 1) // a table column or field labelled "dob", "ssn"
			}
			if c.Score < e.minScore {
				continue
			}
			c.Text = text[c.Start:c.End]
			cands[k] = c
			k++
		}
		cands = cands[:k]
	}
	s.cands = cands
	if len(cands) == 0 {
		return dst
	}
	return resolve(dst, cands, s, len(text))
}

// resolve appends to dst the non-overlapping subset of cands chosen greedily by score, then
// length, then position, sorted by Start. Occupied bytes are tracked in a bitmap, so the cost is
// O(n log n) in the number of candidates plus their total length.
func resolve(dst, cands []Entity, s *scratch, textLen int) []Entity {
	slices.SortFunc(cands, func(a, b Entity) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.End-b.Start, a.End-a.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Type, b.Type)
	})
	words := (textLen + 63) / 64
	if cap(s.bits) < words {
		s.bits = make([]uint64, words)
	}
	bits := s.bits[:words]
	clear(bits)
	n0 := len(dst)
	for _, c := range cands {
		if anySet(bits, c.Start, c.End) {
			continue
		}
		setRange(bits, c.Start, c.End)
		dst = append(dst, c)
	}
	out := dst[n0:]
	slices.SortFunc(out, func(a, b Entity) int { return cmp.Compare(a.Start, b.Start) })
	return dst
}

func anySet(bits []uint64, lo, hi int) bool {
	for i := lo; i < hi; {
		w, b := i/64, uint(i%64)
		if b == 0 && i+64 <= hi {
			if bits[w] != 0 {
				return true
			}
			i += 64
			continue
		}
		if bits[w]&(1<<b) != 0 {
			return true
		}
		i++
	}
	return false
}

func setRange(bits []uint64, lo, hi int) {
	for i := lo; i < hi; {
		w, b := i/64, uint(i%64)
		if b == 0 && i+64 <= hi {
			bits[w] = ^uint64(0)
			i += 64
			continue
		}
		bits[w] |= 1 << b
		i++
	}
}
