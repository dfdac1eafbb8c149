package main

import (
	"fmt"

	"github.com/edgewan/edgewan/aigw/detect/internal/namemodel"
)

// RunningOrigins are the name origins of the running-text corpus: every origin that neither
// generalisation split uses, so that corpus never carries a name of the text that measures.
var RunningOrigins = []string{"anglophone", "arabic_persian_turkic", "celtic_iberian_basque",
	"east_asian", "germanic_romance", "hungarian_greek_georgian", "slavic_baltic"}

// RunningConfig returns the configuration of testdata/corpus_running.jsonl: names in running
// text with no cue (no title, intro phrase, label, greeting or e-mail), of the origins above,
// among hard negatives that are capitalised like names (companies, products, places, months,
// headings, capitalised words at a sentence start). Only aigw/detect's name rescorer learns
// from it; no test scores it.
func RunningConfig() (Config, error) {
	var first, last []string
	for _, o := range RunningOrigins {
		g, f, err := namemodel.OriginNames(o)
		if err != nil {
			return Config{}, fmt.Errorf("running corpus: %w", err)
		}
		first, last = append(first, g...), append(last, f...)
	}
	return Config{
		Name: "running", Seed: 4242, Samples: 1500,
		Templates: templatesR, Weights: weightsR,
		First: first, Last: last,
		PlaceNegatives: placeNegatives,
	}, nil
}

// orgNegatives, productNegatives and headingNegatives are capitalised runs that are not
// people, written unlabelled in running text.
var (
	orgNegatives = []string{"Northwind Traders", "Contoso Pharma", "Blue Harbor Logistics", "Meridian Health",
		"Atlas Freight", "Silverline Capital", "Greenfield Foods", "Orion Analytics", "Pinecrest Insurance",
		"Harborview Dental", "Redwood Credit Union", "Summit Legal Group", "Brightwater Energy", "Falcon Air",
		"Keystone Builders", "Lakeside Clinic", "Crescent Media", "Ironbridge Consulting", "Sunrise Bakery"}
	productNegatives = []string{"Office Suite", "Cloud Console", "Power Query", "Visual Studio Code", "Data Studio",
		"Smart Hub", "Galaxy Tab", "Surface Pro", "Pixel Buds", "Kindle Paperwhite", "Model Three", "Air Fryer Max",
		"Route Planner", "Team Inbox", "Quick Pay", "Secure Vault", "Echo Dot", "Fire Stick"}
	headingNegatives = []string{"Quarterly Review", "Action Items", "Release Notes", "Next Steps",
		"Meeting Summary", "Open Questions", "Travel Policy", "Annual Report", "Customer Feedback",
		"Project Status", "Known Issues", "Budget Overview", "Incident Report", "Safety Briefing"}
	startNegatives = []string{"However", "Meanwhile", "Unfortunately", "Afterwards", "Overall", "Yesterday",
		"Tomorrow", "Please", "Thanks", "Luckily", "Honestly", "Finally", "Instead", "Otherwise", "Also"}
	monthNegatives = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
)

// templatesR are running-text sentences: people named with no cue, and negatives in the same
// positions.
var templatesR = map[string][]string{
	"person": {
		"{person} said the shipment would be late again.",
		"{person} wrote back within the hour and the refund was approved.",
		"I ran into {person} at the conference and we talked about the merger.",
		"The draft from {person} is in the shared folder.",
		"According to {person}, the server room flooded overnight.",
		"{person} joined the finance team in {month}.",
		"We still need sign-off from {person} before the launch.",
		"{person} and {person} will present the results on {month} 3.",
		"Both {person} and {person} asked about the parking permits.",
		"{start}, {person} missed the train and arrived at noon.",
		"After lunch {person} reviewed the contract line by line.",
		"The kids stayed with {person} over the weekend.",
		"My neighbour {person} keeps parking across our driveway.",
		"{person} thinks the numbers in the second table are off.",
		"Last week {person} moved to {place_neg} for the new job.",
		"It was {person} who found the leak in the basement.",
		"{person} asked whether the invoice had been paid.",
		"The vendor sent the samples to {person} instead of me.",
		"{person} left the company in {month} after twelve years.",
		"{person} (finance) approved the budget; {person} did not reply.",
		"Minutes taken by {person}. {person} opened the meeting at 10:05.",
		"{person} confirmed the booking and {person} paid the deposit.",
		"I forwarded the complaint to {person} yesterday.",
		"Our landlord, {person}, refuses to fix the heating.",
		"{person}'s flight lands at 6 so the handover is tomorrow.",
		"The award went to {person} from the {org} team.",
		"{person} replied that {org} had already shipped it.",
		"Send the revised slides to {person} before {weekday}.",
	},
	"single": {
		"{first} said she would bring the keys.",
		"I asked {first} to check the figures again.",
		"Thanks to {first} the move went smoothly.",
		"{first} wrote that the parcel never arrived.",
		"can you ask {first} if the van is free on {weekday}?",
		"{first} and I will cover the late shift.",
		"We had dinner with {first} and her brother.",
		"{first} joined in {month} and already runs the night desk.",
		"The twins stayed with {first} until {weekday}.",
		"ok {first} just confirmed, see you at 8",
		"Sorry, {first} is off sick today.",
		"I'll tell {first} you called.",
	},
	"single_negative": {
		"{start} I would bring the keys.",
		"{month} said it all: sales doubled.",
		"Thanks to {product} the move went smoothly.",
		"can you ask {heading} if the van is free on {weekday}?",
		"ok {weekday} works, see you at 8",
		"The {product} is off today.",
		"We had dinner in {place_neg} with her brother.",
	},
	"negative": {
		"{org} said the shipment would be late again.",
		"{org} announced a new plant near {place_neg}.",
		"{start}, the {product} crashed twice during the demo.",
		"{heading}\nThe team agreed to move the release to {month}.",
		"{heading}: the {product} update is postponed.",
		"In {month} the office at {place_neg} closes for renovation.",
		"{month} was quiet; {weekday} is usually busier.",
		"We switched from {product} to {product} last year.",
		"{start} the numbers look better than in {month}.",
		"The contract with {org} ends in {month}.",
		"{org} and {org} will merge next year.",
		"Our {product} stopped syncing after the update.",
		"{heading}\n- renew the {product} licences\n- call {org} about the invoice",
		"Flights to {place_neg} were cancelled on {weekday}.",
		"{start}, {org} confirmed the order.",
	},
}

var weightsR = map[string]int{"person": 6, "single": 3, "negative": 4, "single_negative": 2}
