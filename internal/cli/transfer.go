package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/archive"
	"github.com/sgam-dev/sgam/store"
)

func (a *app) exportCommand() *cobra.Command {
	var onlyTenant bool
	var out string
	c := &cobra.Command{
		Use:   "export",
		Short: "Write schemas, episodes and facts as JSONL: lossless, both time axes, sources and evidence",
		Long: `Write every schema version, episode and fact row, exactly as stored (ids, valid and
transaction time, sources, corroborating evidence), as JSONL to standard
output or --out. 'sgam import' restores it exactly, into this or another
database. Every tenant is exported unless --only-tenant limits it to --tenant.

The export carries every schema version first (the store default's and each
tenant's, with their numbers and applied_at), so that the rows' schema
versions govern the target as they did here. Pending candidates, receipts,
API keys, budgets, extraction records and embeddings are not exported.`,
		Example: `  sgam export --db sgam.db > backup.jsonl
  sgam export --db sgam.db | sgam import --db copy.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant := ""
			if onlyTenant {
				tenant = a.tenant
			}
			return a.withExisting(func(s store.Store) error {
				if out == "" {
					n, err := archive.Export(a.ctx, s, tenant, time.Now(), a.stdout)
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stderr, "exported %d schema versions, %d episodes, %d facts\n", n.Schemas, n.Episodes, n.Facts)
					return nil
				}
				// Write beside the target and rename over it only when complete,
				// so a failed export never replaces a good backup.
				f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".partial-*")
				if err != nil {
					return sgam.Errorf(sgam.Invalid, "--out", "%v", err)
				}
				defer os.Remove(f.Name())
				n, err := archive.Export(a.ctx, s, tenant, time.Now(), f)
				if err == nil {
					err = f.Sync()
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				if err := os.Rename(f.Name(), out); err != nil {
					return sgam.Errorf(sgam.Invalid, "--out", "%v", err)
				}
				fmt.Fprintf(a.stderr, "exported %d schema versions, %d episodes, %d facts to %s\n", n.Schemas, n.Episodes, n.Facts, out)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&onlyTenant, "only-tenant", false, "export only the rows of --tenant")
	c.Flags().StringVar(&out, "out", "", "write to this file instead of standard output")
	return c
}

func (a *app) importCommand() *cobra.Command {
	var batch int
	c := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Restore a JSONL export (from FILE or standard input) exactly",
		Long: `Restore a JSONL export made by 'sgam export': schema versions first (under
their own numbers and applied_at; one already stored with the same hash is
skipped, another schema under its number stops the import), then episodes and
facts with ids, both time axes, sources and evidence unchanged. Records are
committed --batch at a time; after each
commit everything up to that line is durable. Rows already present and
identical are skipped, so an interrupted import can simply be run again; a
different row under a present id, or rows that would break an invariant,
stop the import with the line at fault, and that batch writes nothing.

With --json, one line per commit is printed to standard output:
  {"committed":{"episodes":..,"facts":..,"episodes_present":..,"facts_present":..},"line":N}`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// An error names a field of the input's line ("line 12: source:
			// ..."), not a flag of this command: no renaming.
			a.fields = nil
			in := a.stdin
			var size int64 = -1
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return sgam.Errorf(sgam.Invalid, "FILE", "%v", err)
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil {
					size = st.Size()
				}
				in = f
			}
			if batch < 1 || batch > 100_000 {
				return sgam.Errorf(sgam.Invalid, "--batch", "must be between 1 and 100000")
			}
			// An empty input is refused before the store is opened, so
			// that it creates no database.
			br := bufio.NewReaderSize(in, 64<<10)
			if _, err := br.Peek(1); err == io.EOF {
				return sgam.Errorf(sgam.Invalid, "FILE", "the input is empty: an export starts with a header line")
			}
			in = br
			return a.withStore(func(s store.Store) error {
				opts := archive.ImportOptions{BatchRecords: batch}
				var bar *progressbar.ProgressBar
				switch {
				case a.jsonOut:
					opts.Committed = func(total sgam.ImportStats, line int) {
						a.printJSONLine(map[string]any{"committed": total, "line": line})
					}
				case isTerminal(a.stderr):
					bar = progressbar.NewOptions64(size, progressbar.OptionSetWriter(raw(a.stderr)), progressbar.OptionShowBytes(true),
						progressbar.OptionSetDescription("importing"), progressbar.OptionClearOnFinish())
					in = io.TeeReader(in, bar)
				default:
					last := time.Now()
					opts.Committed = func(total sgam.ImportStats, line int) {
						if time.Since(last) > 2*time.Second {
							last = time.Now()
							fmt.Fprintf(a.stderr, "import: line %d, %d facts and %d episodes written\n", line, total.Facts, total.Episodes)
						}
					}
				}
				total, err := archive.Import(a.ctx, s, in, opts)
				if bar != nil {
					bar.Finish()
				}
				fmt.Fprintf(a.stderr, "imported %d schema versions, %d episodes, %d facts (already present: %d schema versions, %d episodes, %d facts)\n",
					total.Schemas, total.Episodes, total.Facts, total.SchemasPresent, total.EpisodesPresent, total.FactsPresent)
				return err
			})
		},
	}
	c.Flags().IntVar(&batch, "batch", 1000, "records per transaction")
	return c
}

// printJSONLine writes v as one compact JSON line.
func (a *app) printJSONLine(v any) {
	b, _ := jsonMarshal(v)
	fmt.Fprintf(a.stdout, "%s\n", b)
}

func isTerminal(w io.Writer) bool {
	f, ok := raw(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
