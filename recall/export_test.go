package recall

import "github.com/sgam-dev/sgam"

// Render is render, for the golden tests of package recall_test: c's
// header (question, instants, subjects, attributes, budget) is given, the
// facts and evidence are ranked already.
func Render(c *Context, current, past, related []Fact, evidence []sgam.EpisodeHit) error {
	return render(c, answer{current: current, past: past, related: related, evidence: evidence})
}
