package cli

import "github.com/spf13/cobra"

func (a *app) benchCommand() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "Benchmark the store against the reference recipe", RunE: func(*cobra.Command, []string) error { return nil }}
}
