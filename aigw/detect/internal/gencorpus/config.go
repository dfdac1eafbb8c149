package main

import "strings"

// Main returns the configuration of the main corpus: templates A and names from the gazetteer.
func Main(gz Gazetteer) Config {
	return Config{
		Name: "main", Seed: 20240501, Samples: 3200,
		Templates: templatesA, Weights: weightsA,
		First: gz.First, Last: gz.Last,
		Streets: strings.Fields(`Main Oak Maple Cedar Elm Pine Washington Lake Hill Park Sunset Lincoln
			Jefferson Madison Franklin Highland Church Spring River Walnut Chestnut Evergreen Willow Meadow
			Forest Ridge Valley Broad Market Union Center Mill 5th 42nd 1st 3rd Second Third Fourth Pleasant
			Prospect Cherry Jackson Adams Lakeview Grand Summit`),
		Cities: strings.Split("Springfield|IL,Austin|TX,Portland|OR,Denver|CO,Boston|MA,Seattle|WA,Madison|WI,"+
			"Columbus|OH,Phoenix|AZ,Raleigh|NC,Nashville|TN,Richmond|VA,Albany|NY,Sacramento|CA,Salem|OR,"+
			"Dover|DE,Trenton|NJ,Lansing|MI,San Jose|CA,Salt Lake City|UT,New York|NY,Chicago|IL,Miami|FL,Atlanta|GA", ","),
		UKStreets: []string{"Baker Street", "High Street", "Church Road", "Station Road", "Victoria Road",
			"Park Lane", "Queen Street", "King's Road", "Mill Lane", "London Road", "Oxford Street", "Green Lane"},
		UKCities: []string{"London", "Manchester", "Bristol", "Leeds", "Oxford", "Cambridge", "York", "Brighton"},
		DEStreets: []string{"Hauptstraße", "Bahnhofstraße", "Schillerstraße", "Goethestraße", "Gartenweg",
			"Lindenallee", "Marktplatz", "Kirchgasse", "Berliner Straße", "Frankfurter Allee", "Kaiserstr.",
			"Mozartstraße", "Am Ring", "Schulweg"}[:13],
		DECities: []string{"Berlin", "München", "Hamburg", "Köln", "Frankfurt am Main", "Stuttgart", "Düsseldorf", "Leipzig"},
		FRStreets: []string{"rue de la Paix", "avenue des Champs-Élysées", "boulevard Saint-Michel",
			"place Bellecour", "rue Victor Hugo", "rue du Faubourg Saint-Honoré", "avenue Jean Jaurès",
			"rue de Rivoli", "boulevard Haussmann", "rue des Lilas"},
		FRCities:  []string{"Paris", "Lyon", "Marseille", "Toulouse", "Bordeaux", "Lille", "Nantes", "Strasbourg"},
		ESStreets: []string{"Calle de Alcalá", "Calle Mayor", "Paseo de Gracia", "Avenida de la Constitución", "Calle Gran Vía", "Plaza Mayor", "Calle Serrano"},
		ITStreets: []string{"Via Roma", "Via Garibaldi", "Piazza Navona", "Corso Vittorio Emanuele", "Via del Corso", "Viale Europa", "Via Dante"},
		Domains: []string{"example.com", "mail.example.org", "gmail.com", "outlook.com", "acme.io",
			"company.co.uk", "firma.de", "societe.fr", "empresa.es", "uni-heidelberg.de", "corp.example.net"},
	}
}

// holdoutFirst and holdoutLast are names from languages the gazetteer does not cover; any that
// happen to be in it are dropped.
var (
	holdoutFirst = strings.Fields(`Zoltán Gergely Csaba Levente Bence Réka Zsófia Zsuzsanna Tünde
		Ildikó Juha Pekka Tuomas Jukka Antti Kaisa Aino Eero Sigurður Guðrún Ragnheiður Chukwuemeka
		Oluwaseun Ngozi Adebayo Chiamaka Obinna Folasade Babajide Iñaki Aitor Itziar Dafydd Gwenllian
		Caoimhe Tadhg Ruairí Konstantinos Dimitrios Panagiotis Evangelia Vasiliki Thanasis Nomvula
		Thabo Sipho Zanele Bongani Tenzin Dorje Pemba Batbayar Enkhtuya Altantsetseg Levan Zurab
		Khatuna Aroha Wiremu Keoni Makoa Kalani Ondine Xochitl Itzel Cuauhtémoc Anahí Teodoro Eliska`)
	holdoutLast = strings.Fields(`Kovács Szabó Horváth Nagy Tóth Varga Farkas Virtanen Korhonen
		Mäkinen Nieminen Hämäläinen Sigurðsson Jónsdóttir Okonkwo Adeyemi Oyelaran Nwosu Etxeberria
		Goikoetxea Agirre Papadopoulos Georgiou Nikolaidis Beridze Kapanadze Gelashvili Dlamini
		Nkosi Mthembu Bayarsaikhan Ganbaatar Srisuk Chaiyaporn Ngata Parata Kahananui Tlatelolco
		Quispe Mamani Huaman Tshabalala Ravelomanana Rakotomalala Andrianarivo Oyelowo Achterberg`)
)

// Holdout returns the configuration of the holdout corpus: another seed, templates B, and
// names, streets, cities and domains not used by the main corpus.
func Holdout(gz Gazetteer) Config {
	keep := func(ws []string) []string {
		var out []string
		for _, w := range ws {
			if !gz.Folded[fold(w)] {
				out = append(out, w)
			}
		}
		return out
	}
	return Config{
		Name: "holdout", Seed: 77001, Samples: 1600,
		Templates: templatesB, Weights: weightsB,
		First: keep(holdoutFirst), Last: keep(holdoutLast),
		Streets: strings.Fields(`Birch Aspen Magnolia Dogwood Sycamore Juniper Hawthorne Peachtree
			Bayshore Cypress Laurel Poplar Redwood Sequoia Tamarack Linden Alder Hickory Mulberry 7th 12th 21st`),
		Cities: strings.Split("Boise|ID,Tulsa|OK,Omaha|NE,Fargo|ND,Reno|NV,Tacoma|WA,Savannah|GA,Mobile|AL,"+
			"Eugene|OR,Provo|UT,Ithaca|NY,Durham|NC,Toledo|OH,Wichita|KS,Spokane|WA,Santa Fe|NM", ","),
		UKStreets: []string{"Acacia Avenue", "Cromwell Road", "Abbey Road", "Gower Street", "Tottenham Court Road", "Kingsway", "Marylebone Lane"},
		UKCities:  []string{"Edinburgh", "Cardiff", "Belfast", "Norwich", "Bath", "Exeter", "Durham"},
		DEStreets: []string{"Lindenstraße", "Rosenweg", "Ahornallee", "Domplatz", "Schlossgasse", "Hamburger Straße", "Ulmer Str.", "Tulpenweg"},
		DECities:  []string{"Bremen", "Dresden", "Hannover", "Nürnberg", "Bonn", "Freiburg im Breisgau", "Kiel"},
		FRStreets: []string{"rue Nationale", "avenue Foch", "boulevard Voltaire", "rue de l'Église", "quai des Chartrons", "impasse des Roses", "cours Mirabeau"},
		FRCities:  []string{"Nice", "Rennes", "Grenoble", "Dijon", "Angers", "Reims", "Aix-en-Provence"},
		ESStreets: []string{"Calle del Prado", "Avenida Diagonal", "Rambla de Catalunya", "Calle Larios", "Paseo del Prado", "Calle de Toledo"},
		ITStreets: []string{"Via Appia", "Corso Buenos Aires", "Via Toledo", "Piazza della Signoria", "Via Nazionale", "Viale dei Mille"},
		Domains: []string{"proton.me", "posteo.de", "example.travel", "shop.example.ch", "mailbox.org",
			"uni-wien.ac.at", "startup.ai", "kantoor.nl", "hotmail.fr", "dept.gov.example"},
	}
}

// Generalise returns the configuration of the generalisation corpus, split from the tuned
// corpora by kind rather than by seed: templates C (realistic e-mails, tickets, chat, CSV rows,
// logs and forms, written after the detectors were tuned), names only from the name origins
// that aigw/detect's generalisation test leaves out of the name model's training (and not in the
// gazetteer), addresses only from countries the tuned corpora never had, and card, SSN, date
// and phone-extension forms the tuned corpora never had.
//
// dev selects the development split, which tuning may look at: the other half of templates C,
// namemodel.DevOrigins and other countries. The held-out split is only ever scored.
func Generalise(gz Gazetteer, first, last []string, dev bool) Config {
	keep := func(ws []string) []string {
		var out []string
		for _, w := range ws {
			if !gz.Folded[fold(w)] {
				out = append(out, w)
			}
		}
		return out
	}
	name, seed := "generalise", uint64(91011)
	if dev {
		name, seed = "generalise-dev", 5150
	}
	return Config{
		Name: name, Seed: seed, Samples: 1200,
		Templates: devTemplates(splitTemplates(templatesC, dev), dev), Weights: weightsC,
		First: keep(first), Last: keep(last),
		Intl:           splitCountries(dev),
		PlaceNegatives: splitList(placeNegatives, dev),
		Streets:        strings.Fields(`Birch Aspen Magnolia`), Cities: []string{"Boise|ID"},
		Domains: []string{"savanna-ag.ke", "andeslink.pe", "steppe.mn", "fjord.no", "mail.example.nz",
			"kaimana.example", "umoya.co.za", "helsinki-tech.fi"},
	}
}

// splitTemplates returns every other template of each category: the even ones for the
// development split, the odd ones for the held-out split.
func splitTemplates(ts map[string][]string, dev bool) map[string][]string {
	out := map[string][]string{}
	for c, list := range ts {
		for i, t := range list {
			if (i%2 == 0) == dev {
				out[c] = append(out[c], t)
			}
		}
	}
	return out
}

// splitCountries returns the address countries of a split.
func splitCountries(dev bool) []intlAddress {
	var out []intlAddress
	for _, a := range intlAddresses {
		if devCountries[a.country] == dev {
			out = append(out, a)
		}
	}
	return out
}

// devCountries are the address countries of the development split; the held-out split has
// the others (PL, BE, CH, AT, DK, IE).
var devCountries = map[string]bool{"NL": true, "AU": true, "CA": true, "BR": true, "SE": true, "PT": true}

// splitList returns the even elements for the development split, the odd ones otherwise.
func splitList(l []string, dev bool) []string {
	var out []string
	for i, x := range l {
		if (i%2 == 0) == dev {
			out = append(out, x)
		}
	}
	return out
}

// devTemplates adds templatesDevExtra to the development split.
func devTemplates(ts map[string][]string, dev bool) map[string][]string {
	if dev {
		for c, list := range templatesDevExtra {
			ts[c] = append(ts[c], list...)
		}
	}
	return ts
}
