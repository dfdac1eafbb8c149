package detect

import (
	"strings"
)

// emailDetector finds addresses like "jane.doe+tag@mail.example.co.uk". The local part uses the
// common unquoted character set; the domain needs at least two labels and an alphabetic TLD.
type emailDetector struct{}

const (
	emailScore = 0.9
	// roleEmailScore is under DefaultMinScore: a role mailbox (support@, noreply@, payroll@)
	// reaches a team, not a person, so it is not personal data; a stricter MinScore still
	// reports it (subtype "role").
	roleEmailScore = 0.45
)

// roleMailboxes are local parts, or parts of them, that name a function rather than a person:
// RFC 2142's and the common English ones, and departments, functions and greetings of other
// languages (Spanish, Portuguese, French, German, Italian, Dutch, Polish, Hungarian, Turkish,
// Czech, Romanian, the Nordic languages, Indonesian, Vietnamese, Greek and Japanese in Latin
// letters), compared without diacritics.
var roleMailboxes = map[string]bool{}

func init() {
	for _, w := range strings.Fields(roleMailboxWords) {
		roleMailboxes[w] = true
	}
}

const roleMailboxWords = `abuse accounts accounting admin administrator alerts billing bookings
careers contact contactus customerservice customercare donotreply enquiries feedback finance hello
help helpdesk hostmaster hr info inquiries invoices jobs legal mailerdaemon marketing media
newsletter noc noreply notifications office ops orders payroll postmaster press privacy reception
reservations sales security service support team webmaster
intake admissions frontdesk front desk enquiry registrar dispatch shipping returns warehouse
purchasing procurement it itsupport servicedesk compliance dpo gdpr recruitment recruiting talent
events partners partnerships investors ir pr bookkeeping ap ar accountspayable accountsreceivable
treasury tax appointments pharmacy records claims membership members donations volunteers
editorial news concierge general main mail email post hiring hq admin office reply bounce
ventas recepcion contabilidad administracion facturacion soporte atencion atencionalcliente rrhh
rh compras cobranza cobranzas contacto informacion secretaria reservas pedidos gerencia comercial
clientes hola
atendimento vendas financeiro contato geral faturamento suporte recepcao cobranca juridico
diretoria sac ola
accueil compta comptabilite ventes serviceclient direction secretariat reservation facturation
bonjour
buchhaltung verwaltung vertrieb kontakt empfang sekretariat personal einkauf bestellung rechnung
rechnungen kundenservice kundendienst zentrale anfrage anfragen presse redaktion praxis kanzlei
hallo
amministrazione segreteria vendite commerciale contabilita ufficio assistenza prenotazioni ordini
acquisti direzione ciao
klantenservice verkoop administratie receptie boekhouding inkoop secretariaat facturen
bestellingen
biuro ksiegowosc sprzedaz zamowienia obsluga recepcja kadry faktury handlowy kancelaria serwis
iroda ugyfelszolgalat titkarsag penzugy ertekesites rendeles recepcio konyveles szamlazas
muhasebe satis destek bilgi iletisim insankaynaklari ik siparis musterihizmetleri fatura
rezervasyon sekreterlik idari
podatelna kancelar obchod objednavky fakturace recepce ucetni
contabilitate vanzari comenzi relatii receptie
kundeservice kundservice kontor postmottak mottak salg forsaljning ekonomi bokning booking
asiakaspalvelu toimisto myynti laskutus kirjaamo hej hei bokanir skrifstofa afgreidsla mottaka
cs layanan penjualan halo lienhe hotro kinhdoanh grammateia logistirio
soumu somu keiri eigyo eigyou jinji uketsuke otoiawase toiawase kouhou jimukyoku saiyo
oncall rota duty pager desk rep reps bot bots list lists listserv owner owners announce digest
subscribe unsubscribe bounces room rooms board committee staff crew`

// roleMailbox reports whether the local part local names a function rather than a person: it
// is a role word (roleMailboxes) after dropping a "+tag" and the separators '.', '-' and '_'
// ("customer.service"); or every part between separators is a role word, an ordinary word of
// the name model's word set, or a short code of a country, an office, a room or a team ("info.hu",
// "sales-eu", "office_2", "sre-oncall", "room-4b"), with a role word or two ordinary words among
// them ("readers.rep", "canteen-orders") and no part a known name or an initial ("ana.support",
// "j.smith" are personal); or it is one ordinary word of the name model's word set that neither
// the gazetteer nor the model takes for a name ("ventas", "recepcion", "kitchen", "board").
func roleMailbox(local string) bool {
	if i := strings.IndexByte(local, '+'); i >= 0 {
		local = local[:i]
	}
	var buf [32]byte
	n := 0
	parts, role, words, name, short := 0, 0, 0, false, 0
	var fold [64]byte
	m := defaultNameModel()
	for i := 0; i <= len(local); {
		j := i
		for j < len(local) && local[j] != '.' && local[j] != '-' && local[j] != '_' {
			j++
		}
		if j > i {
			parts++
			k, ok := foldInto(fold[:0:len(fold)], local[i:j])
			f := lookupName(local[i:j])
			switch {
			case !ok:
			case roleMailboxes[string(k)]:
				role++
			case len(k) == 2 || allDigits(local[i:j]): // a country, an office, a number
				short++
			case len(k) == 1: // an initial
				name = true
			case f&(gzFirst|gzLast) != 0:
				name = true
			case len(k) == 3 || len(k) <= 4 && hasDigit(local[i:j]): // a team, a room
				short++
			case m.IsWord(k) && (f&gzNotName != 0 || m.NameLLR(k) < 0):
				words++
			}
			for _, c := range k {
				if n < len(buf) {
					buf[n] = c
				}
				n++
			}
		}
		i = j + 1
	}
	if n <= len(buf) && roleMailboxes[string(buf[:n])] {
		return true
	}
	if parts > 1 {
		return !name && (role > 0 || words > 1) && role+words+short == parts
	}
	if parts != 1 || n < 4 || n > len(buf) {
		return false
	}
	f := lookupName(local)
	if f&(gzFirst|gzLast|gzProbable) != 0 {
		return false
	}
	w := buf[:n]
	return m.IsWord(w) && (f&gzNotName != 0 || f == 0 && m.NameLLR(w) < 0)
}

// listHost reports whether the host h serves mailing lists ("lists.example.org",
// "groups.example.com", "googlegroups.com"): its addresses are lists and their owners,
// subscriptions and bounces, not people.
func listHost(h string) bool {
	for _, p := range [...]string{"lists.", "list.", "groups.", "googlegroups."} {
		if strings.HasPrefix(h, p) {
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainByte(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

func (emailDetector) Detect(text string, out []Entity) []Entity {
	for i := 0; i < len(text); {
		k := strings.IndexByte(text[i:], '@')
		if k < 0 {
			break
		}
		at := i + k
		i = at + 1
		// Local part: at most 64 bytes; '@' is not a local byte, so scans never overlap.
		s := at
		for s > 0 && at-s < 64 && isLocalByte(text[s-1]) {
			s--
		}
		if s > 0 && isLocalByte(text[s-1]) {
			continue // longer than 64 bytes
		}
		for s < at && (text[s] == '.' || text[s] == '-') {
			s++
		}
		if s == at || text[at-1] == '.' || strings.Contains(text[s:at], "..") {
			continue
		}
		e := at + 1
		for e < len(text) && e-at <= 254 && isDomainByte(text[e]) {
			e++
		}
		for e > at+1 && (text[e-1] == '.' || text[e-1] == '-') {
			e--
		}
		if !validHostname(text[at+1 : e]) {
			continue
		}
		x := Entity{Type: TypeEmail, Start: s, End: e, Score: emailScore}
		if roleMailbox(text[s:at]) || listHost(text[at+1:e]) {
			x.Subtype, x.Score = "role", roleEmailScore
		}
		out = append(out, x)
		i = e
	}
	return out
}

// validHostname reports whether h is a DNS name with at least two labels and an alphabetic
// top-level label (or an IDNA "xn--" one).
func validHostname(h string) bool {
	if len(h) < 4 || len(h) > 253 {
		return false
	}
	labels, start := 0, 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		l := h[start:i]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		labels++
		if i == len(h) { // top-level label
			if strings.HasPrefix(l, "xn--") {
				break
			}
			if len(l) < 2 || len(l) > 24 {
				return false
			}
			for j := 0; j < len(l); j++ {
				if !isAlpha(l[j]) {
					return false
				}
			}
		}
		start = i + 1
	}
	return labels >= 2
}
