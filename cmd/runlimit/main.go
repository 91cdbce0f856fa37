// Command runlimit runs Runlimit's admission demo and operates its
// PostgreSQL store.
//
// Usage:
//
//	runlimit demo [--database-url URL]   run the login admission example, on the memory store or PostgreSQL
//	runlimit migrate [--print-sql]        apply (or print) the PostgreSQL schema
//	runlimit cleanup [--every DURATION]   delete expired counters, once or every interval
//	runlimit status [--json]              show rows, ledger headroom, sizes and dead tuples
//	runlimit version                      print the module version and VCS revision
//	runlimit help [command]               show this help, or a command's (also runlimit <command> --help)
//
// The database commands (migrate, cleanup, status) take the database from
// --database-url or, when the flag is absent, from the environment variable
// RUNLIMIT_DATABASE_URL. The demo reads only the flag, so a plain "runlimit
// demo" always runs on the memory store. Every command that touches the
// database takes --schema, the schema holding Runlimit's objects, or, when
// the flag is absent, RUNLIMIT_POSTGRES_SCHEMA, as the service reads it
// (public by default). No password, whether in a URL, a keyword/value string,
// PGPASSWORD or a stray argument, is ever printed.
//
// Exit codes: 0 success (and a cleanup loop stopped by SIGINT or SIGTERM),
// 1 failure, 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

const usage = `runlimit: keyed, anchored fixed-window rate limits

Usage:
  runlimit <command> [flags]

Commands:
  demo      run the login admission example (client 40/min AND identity 8/min)
            on the memory store, or on PostgreSQL with --database-url
  migrate   apply Runlimit's PostgreSQL schema (--print-sql prints it instead)
  cleanup   delete expired counters from PostgreSQL, once or --every interval
  status    show PostgreSQL rows, ledger headroom, sizes and dead tuples
  version   print the module version and VCS revision (also --version)
  help      show this help

migrate, cleanup and status take --database-url, or $RUNLIMIT_DATABASE_URL
when the flag is absent, and --schema, or $RUNLIMIT_POSTGRES_SCHEMA when the
flag is absent (default public).

Run "runlimit <command> --help" for a command's flags.
Exit codes: 0 success, 1 failure, 2 usage error.
`

// errUsage marks errors caused by the command line; main exits 2 for them.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code. getenv reads
// the environment (os.Getenv, or a test's own), so no test depends on the
// environment it runs in.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	// Everything written to stderr (errors, usage, the flag package's own
	// complaints, which quote the values they reject) has every password
	// found in the command line or the environment masked.
	masked := newMaskingWriter(stderr, commandSecrets(args, getenv))
	defer masked.Flush()
	stderr = masked
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "demo":
		err = runDemo(ctx, args[1:], stdout, stderr)
	case "migrate":
		err = runMigrate(ctx, args[1:], getenv, stdout, stderr)
	case "cleanup":
		err = runCleanup(ctx, args[1:], getenv, stdout, stderr)
	case "status":
		err = runStatus(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) == 1, len(args) == 2 && (args[1] == "help" || isHelpFlag(args[1])):
			fmt.Fprint(stdout, usage)
			return 0
		case len(args) == 2 && isCommand(args[1]):
			// "runlimit help migrate" is "runlimit migrate --help".
			return run(ctx, []string{args[1], "--help"}, getenv, stdout, stderr)
		}
		// The arguments are not repeated: one may be a URL.
		fmt.Fprintf(stderr, "runlimit help: want nothing or one command name\n\n%s", usage)
		return 2
	case "version", "-version", "--version":
		if len(args) == 2 && isHelpFlag(args[1]) {
			// Where the other commands' flag sets write their usage.
			fmt.Fprint(stderr, versionUsage)
			return 0
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "runlimit version: takes no arguments\n\n%s", usage)
			return 2
		}
		fmt.Fprintln(stdout, version(debug.ReadBuildInfo()))
		return 0
	default:
		fmt.Fprintf(stderr, "runlimit: unknown command %q\n\n%s", urlSecrets(args[0]).redact(args[0]), usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "runlimit %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "runlimit %s: %v\n", args[0], err)
		return 1
	}
}

// versionUsage is what "runlimit version --help" and "runlimit help
// version" print.
const versionUsage = `Usage: runlimit version

Prints the module version ("(devel)" for a build from a checkout), the VCS
revision when the build recorded one, and the Go version. "runlimit --version"
does the same. It takes no flags.
`

// isCommand reports whether name is a command that "runlimit help name"
// describes.
func isCommand(name string) bool {
	switch name {
	case "demo", "migrate", "cleanup", "status", "version":
		return true
	}
	return false
}

// isHelpFlag reports whether arg is a flag asking for help, as the flag
// package reads the other commands' arguments.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, summary string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("runlimit "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: runlimit %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, mapping flag errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		arg := fs.Arg(0)
		if strings.Contains(arg, "://") || strings.Contains(arg, "=") {
			// Most likely a database URL or connection string, which may
			// hold a password: never quoted.
			return fmt.Errorf("%w: unexpected argument (a database URL? pass it with --%s or $%s)",
				errUsage, databaseFlagName, envDatabaseURL)
		}
		return fmt.Errorf("%w: unexpected argument %q", errUsage, urlSecrets(arg).redact(arg))
	}
	return nil
}
