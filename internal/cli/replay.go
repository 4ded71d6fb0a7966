package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/replay"
)

func (a *app) replayCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "replay [FILE]",
		Short: "Run a JSONL script of ledger operations; print one JSONL result per operation",
		Long: `Read a JSONL script from FILE (or standard input) and write one JSONL result
per operation to standard output, in order. A failed line changes nothing
and the replay goes on; a summary goes to standard error.

Operations (tenant defaults to --tenant):
  {"op":"clock","now":"2026-06-03T10:00:00Z"}     sets transaction time for what follows
  {"op":"episode","episode_id":"e2","kind":"message","content":"...","occurred_at":"..."}
  {"op":"assert","subject":"mira","attribute":"passport_deadline","value":"2026-06-30","valid_from":"...","source":"e2"}
  {"op":"retract","subject":..,"attribute":..,"at":"...","source":"e3"}
  {"op":"get","subject":..,"attribute":..,"as_of":"...","known_at":"..."}   (both optional)
  {"op":"history","subject":..,"attribute":..}
  {"op":"state","subject":..,"as_of":..,"known_at":..}
  {"op":"trace","fact_id":4}

Results: {"ok":true,...} with "fact", "facts", "episode" or "trace", and
"no_change":true for a repeat; or {"ok":false,"error":{"code","field","message"}}.
Until the first clock line, transaction time is the system clock.

Exit status: 0 when every line succeeded, 1 when any failed (after every
line has run and its result is written).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := a.stdin
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
				}
				defer f.Close()
				in = f
			}
			clock := &sgam.ManualClock{}
			s, err := a.open(clock)
			if err != nil {
				return err
			}
			defer s.Close()
			r := &replay.Runner{Store: s, Clock: clock, Tenant: a.tenant}
			st, err := r.Run(a.ctx, in, a.stdout)
			if err != nil {
				return err
			}
			summary := fmt.Sprintf("replay: %d operations, %d failed", st.Lines, st.Failed)
			if st.Failed > 0 {
				return &sgam.Error{Code: sgam.Internal, Message: summary} // exit 1, as check does
			}
			fmt.Fprintln(a.stderr, summary)
			return nil
		},
	}
}
