// Package cli is the sgam command line: every command, its flags and its
// output. cmd/sgam/main.go only calls Main.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sgam-dev/sgam"
	"github.com/sgam-dev/sgam/extract"
	"github.com/sgam-dev/sgam/llm"
	"github.com/sgam-dev/sgam/store"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1 // the operation failed
	ExitUsage   = 2 // bad input: a flag, an argument or a field
)

// app holds what every command shares: global flags and streams.
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	db      string
	tenant  string
	jsonOut bool

	// fields renames the fields of errors to what the user typed in the
	// running command ("valid_from" -> "--valid-from").
	fields map[string]string
}

// exitError ends a command that printed its own messages with an exit
// status.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is bad input caught by the command line itself: an unknown
// flag, a missing argument.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the command line with args (without the program name) and
// returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: &escaper{w: stdout}, stderr: &escaper{w: stderr}, fields: cliFields}
	root := a.rootCommand()
	root.SetArgs(negativeArgs(root, args))
	root.SetIn(stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		err = usageError{err} // cobra's own, not a flag error
	}
	return a.report(err)
}

// report prints err and returns its exit status: ExitUsage for bad input,
// ExitFailure for anything else.
func (a *app) report(err error) int {
	var se *sgam.Error
	if errors.As(err, &se) {
		name, ok := a.fields[se.Field]
		if base, index, indexed := strings.Cut(se.Field, "["); !ok && indexed {
			// "subjects[1]" is the second --subject: "--subject[1]".
			if flag, known := a.fields[base]; known {
				name, ok = flag+"["+index, true
			}
		}
		if ok {
			c := *se
			c.Field = name
			err = &c
		}
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "sgam: %v\nRun 'sgam --help' for usage.\n", ue.err)
		return ExitUsage
	case sgam.ErrorCode(err) == sgam.Invalid:
		fmt.Fprintf(a.stderr, "sgam: %v\n", err)
		return ExitUsage
	default:
		code := sgam.ErrorCode(err)
		if code == sgam.Internal {
			fmt.Fprintf(a.stderr, "sgam: %v\n", err)
		} else {
			fmt.Fprintf(a.stderr, "sgam: %s: %v\n", code, err)
		}
		if h := hint(err); h != "" {
			fmt.Fprintf(a.stderr, "hint: %s\n", h)
		}
		return ExitFailure
	}
}

// hint is what the CLI adds to an error of the library, which names no
// flag or command of its own: how to act on it from here.
func hint(err error) string {
	var be *extract.BudgetError
	var le *llm.Error
	switch {
	case errors.As(err, &be):
		return "the operator raises it with 'sgam budget set --tokens-per-day N'"
	case errors.Is(err, extract.ErrNoModel):
		return modelHelp
	case errors.As(err, &le) && le.Mode != "" && le.Kind == llm.KindStatus && le.Status >= 400 && le.Status < 500 && le.Status != 429:
		return "pick another way to ask for JSON with --llm-mode (" + llm.EnvMode + "): json_schema, json_object or tools"
	case errors.As(err, &le) && le.Kind == llm.KindTooLarge:
		return "raise --llm-max-tokens (" + llm.EnvMaxTokens + ") if the answer was cut at max_tokens"
	}
	return ""
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "sgam",
		Short: "Schema-guided agent memory: a bitemporal fact ledger",
		Long: `sgam stores what an agent knows as typed facts with validity windows (valid
time), belief windows (transaction time), tenant scope and source episodes.
A correction closes the old fact instead of deleting it, so sgam can always
say which value is current, what was true at any instant, what was believed
at any instant, and who said it.

Instants are RFC 3339 with an offset (2026-06-03T10:00:00Z); values are JSON
(a negative number such as -5 is an argument, not a flag).
Exit status: 0 ok, 1 failure, 2 bad input (the message names the field).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.db == "" {
				return sgam.Errorf(sgam.Invalid, "--db", "is empty")
			}
			return sgam.CheckTenant(a.tenant)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.db, "db", envOr("SGAM_DB", "./sgam.db"), "database: a SQLite file path or a postgres:// URL ($SGAM_DB)")
	pf.StringVar(&a.tenant, "tenant", envOr("SGAM_TENANT", sgam.DefaultTenant), "tenant every command acts within ($SGAM_TENANT)")
	pf.BoolVar(&a.jsonOut, "json", false, "print JSON instead of text")

	root.AddCommand(
		a.demoCommand(),
		a.initCommand(),
		a.schemaCommand(), a.migrateCommand(), a.keysCommand(), a.serveCommand(), a.mcpCommand(),
		a.assertCommand(), a.retractCommand(),
	)
	root.AddCommand(a.memberCommands()...)
	root.AddCommand(
		a.recallCommand(), a.reindexCommand(),
		a.getCommand(), a.stateCommand(), a.historyCommand(), a.traceCommand(), a.traverseCommand(),
		a.pendingCommand(),
		a.episodeCommand(),
		a.ingestCommand(), a.rememberCommand(), a.extractCommand(), a.reextractCommand(), a.workerCommand(), a.budgetCommand(),
		a.replayCommand(),
		a.exportCommand(), a.importCommand(),
		a.checkCommand(),
		a.forgetCommand(), a.expireCommand(), a.compactCommand(), a.receiptsCommand(),
		a.benchCommand(), a.evalCommand(), a.doctorCommand(),
	)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// negativeArgs lets a positional argument be a negative number ('sgam
// assert mira balance -5'): pflag takes every "-5" for a shorthand flag.
// From the first such argument on, the positional arguments move behind a
// "--", in their order, where pflag takes them as arguments; flags and
// their values stay where they are.
func negativeArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return args
	}
	local, inherited := cmd.Flags(), cmd.InheritedFlags()
	// takesValue reports whether flag arg ("--name", "-n", "-n=v") takes
	// the next argument as its value.
	takesValue := func(arg string) bool {
		if name, long := strings.CutPrefix(arg, "--"); long {
			if strings.Contains(name, "=") {
				return false
			}
			if f := local.Lookup(name); f != nil {
				return f.NoOptDefVal == ""
			}
			f := inherited.Lookup(name)
			return f != nil && f.NoOptDefVal == ""
		}
		if len(arg) != 2 {
			return false
		}
		if f := local.ShorthandLookup(arg[1:]); f != nil {
			return f.NoOptDefVal == ""
		}
		f := inherited.ShorthandLookup(arg[1:])
		return f != nil && f.NoOptDefVal == ""
	}
	negative := func(s string) bool {
		return len(s) > 1 && s[0] == '-' && s[1] >= '0' && s[1] <= '9' &&
			local.ShorthandLookup(s[1:2]) == nil && inherited.ShorthandLookup(s[1:2]) == nil
	}
	var kept, moved []string
	for i := 0; i < len(args); i++ {
		switch s := args[i]; {
		case s == "--":
			if moved == nil {
				return args
			}
			moved = append(moved, args[i+1:]...)
			i = len(args)
		case len(s) > 1 && s[0] == '-' && !negative(s): // a flag
			kept = append(kept, s)
			if takesValue(s) && i+1 < len(args) {
				i++
				kept = append(kept, args[i])
			}
		case moved != nil || negative(s):
			moved = append(moved, s)
		default:
			kept = append(kept, s)
		}
	}
	if moved == nil {
		return args
	}
	return append(append(kept, "--"), moved...)
}

// wrapArgs makes argument-count errors usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// open opens the store named by --db, creating it if needed.
func (a *app) open(clock sgam.Clock) (store.Store, error) {
	return store.Open(a.ctx, a.db, store.Options{Clock: clock, Progress: a.upgradeProgress()})
}

// upgradeProgress shows the progress of an upgrade of the database that
// opening it runs (a backfill of a new index) on stderr.
func (a *app) upgradeProgress() func(what string, done, total int) {
	p := &phases{a: a, prefix: "upgrade"}
	return func(what string, done, total int) {
		p.update(what, done, total)
		if done == total {
			p.finish()
		}
	}
}

// openExisting opens the store named by --db for a command that only reads:
// a mistyped path is an error, not a new empty database.
func (a *app) openExisting() (store.Store, error) {
	return store.Open(a.ctx, a.db, store.Options{MustExist: true, Progress: a.upgradeProgress()})
}

// withStore runs fn on the store named by --db, creating it if needed, and
// closes it.
func (a *app) withStore(fn func(store.Store) error) error {
	s, err := a.open(nil)
	if err != nil {
		return err
	}
	return closing(s, fn)
}

// withExisting runs fn on the store named by --db, which must exist (see
// openExisting), and closes it.
func (a *app) withExisting(fn func(store.Store) error) error {
	s, err := a.openExisting()
	if err != nil {
		return err
	}
	return closing(s, fn)
}

// closing runs fn on s and closes s; a failed Close is reported too.
func closing(s store.Store, fn func(store.Store) error) (err error) {
	defer func() {
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	return fn(s)
}

// withFields adds field names for one command to cliFields.
func (a *app) withFields(names map[string]string) {
	a.fields = make(map[string]string, len(cliFields)+len(names))
	for k, v := range cliFields {
		a.fields[k] = v
	}
	for k, v := range names {
		a.fields[k] = v
	}
}

// cliFields are the names the user gave the fields of the library's errors.
var cliFields = map[string]string{
	"tenant": "--tenant", "subject": "SUBJECT", "attribute": "ATTRIBUTE", "value": "VALUE",
	"valid_from": "--valid-from", "at": "--at", "source": "--source", "as_of": "--as-of", "known_at": "--known-at",
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// show prints v as JSON under --json; otherwise text writes it for people
// to w, standard output.
func (a *app) show(v any, text func(w io.Writer) error) error {
	if a.jsonOut {
		return a.printJSON(v)
	}
	return text(a.stdout)
}

// timeFlag parses an optional RFC 3339 flag value; empty is the zero time
// (which reads and writes take as now).
func timeFlag(flag, value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, nil
	}
	return sgam.ParseTime("--"+flag, value)
}

// atFlags parses --as-of and --known-at.
func atFlags(asOf, knownAt string) (sgam.At, error) {
	var at sgam.At
	var err error
	if at.AsOf, err = timeFlag("as-of", asOf); err != nil {
		return at, err
	}
	at.KnownAt, err = timeFlag("known-at", knownAt)
	return at, err
}

// jsonValue parses a VALUE argument: any JSON value.
func jsonValue(arg string) (json.RawMessage, error) {
	v, err := sgam.CanonicalValue("VALUE", []byte(arg), sgam.DefaultMaxValueBytes)
	if err != nil && !strings.ContainsAny(strings.TrimSpace(arg), `"{}[]`) && sgam.ErrorField(err) == "VALUE" &&
		strings.Contains(sgam.ErrorMessage(err), "not valid JSON") {
		return nil, sgam.Errorf(sgam.Invalid, "VALUE", "%q is not JSON; quote a string: '%q'", arg, arg)
	}
	return v, err
}

// now is the default instant of writes that name none.
func now() time.Time { return time.Now() }

// jsonMarshal is json.Marshal without HTML escaping.
func jsonMarshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}
