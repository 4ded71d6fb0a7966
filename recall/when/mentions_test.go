package when

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMentions(t *testing.T) {
	for text, want := range map[string]bool{
		"I went to a support group yesterday":           true,
		"we went biking last weekend":                   true,
		"I ran a charity race last Saturday":            true,
		"I started surfing five years ago":              true,
		"I've known these friends for 4 years":          true,
		"Next month, I'm off to Ireland":                true,
		"Max and I had a blast on our trip last summer": true,
		"I'm hiking with some buddies this weekend":     true,
		"we moved here in 2019":                         true,
		"The opening night is in May":                   true,
		"I painted a sunrise over the lake":             false,
		"you may like it, it was a great day":           false,
		"call me at 5551234":                            false,
		"":                                              false,
	} {
		require.Equal(t, want, Mentions(text), text)
	}
}

func TestAsksWhen(t *testing.T) {
	for q, want := range map[string]bool{
		"When did Mira go camping?":            true,
		"How long has Mira had her turtles?":   true,
		"What year did Mira start surfing?":    true,
		"Which day did the package arrive?":    true,
		"What did Mira paint?":                 false,
		"How did Mira feel about the concert?": false,
	} {
		require.Equal(t, want, AsksWhen(q), q)
	}
}
