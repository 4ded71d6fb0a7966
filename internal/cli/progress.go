package cli

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"
)

// phases shows the progress of long work on stderr: a bar per phase on a
// terminal, one line per phase otherwise (logs, pipes, tests).
type phases struct {
	a      *app
	prefix string // "bench", "migrate"
	bar    *progressbar.ProgressBar
	phase  string
}

// update reports done of total in phase.
func (p *phases) update(phase string, done, total int) {
	if !isTerminal(p.a.stderr) {
		if phase != p.phase {
			fmt.Fprintf(p.a.stderr, "%s: %s\n", p.prefix, phase)
			p.phase = phase
		}
		return
	}
	if phase != p.phase {
		p.finish()
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(raw(p.a.stderr)), progressbar.OptionSetDescription(phase),
			progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
		p.phase = phase
	}
	p.bar.Set(min(done, total))
}

// finish ends the current bar.
func (p *phases) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}
