package conformance_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	"github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

// faultEnv names the fault a child test process runs the suite against.
const faultEnv = "RUNLIMIT_CONFORMANCE_FAULT"

// targets maps each fault to the case written to catch it.
var targets = map[brokenstores.Fault]string{
	brokenstores.ConsumesOnDenial:   "denials/quota",
	brokenstores.NotAtomic:          "batches/all_or_nothing",
	brokenstores.EvictsLiveKeys:     "capacity/never_evicts_an_active_key",
	brokenstores.IgnoresCapacity:    "capacity/full_partition_denies_a_new_key",
	brokenstores.RenewsEarly:        "windows/renewal_exactly_at_expiry",
	brokenstores.RenewsLate:         "windows/renewal_exactly_at_expiry",
	brokenstores.NoKeyLocks:         "concurrency/overlapping_checks_on_one_key_lose_no_update",
	brokenstores.ClockBackwards:     "time/later_windows_never_end_earlier",
	brokenstores.ReordersAllowances: "batches/caller_order_of_allowances",
}

// TestBrokenStore runs the suite against the store with the fault named in
// the environment. It is the child process of TestBrokenStoresAreCaught and
// skips anywhere else.
func TestBrokenStore(t *testing.T) {
	t.Parallel()
	name := os.Getenv(faultEnv)
	if name == "" {
		t.Skip("runs only as a child process of TestBrokenStoresAreCaught")
	}
	fault, ok := brokenstores.ParseFault(name)
	require.True(t, ok, "unknown fault %q", name)
	conformance.Run(t, harness(fault))
}

// TestBrokenStoresAreCaught proves the suite can fail: each broken store
// must fail the case written for its fault. The suite runs in a child
// `go test` process per store (this test binary, reading -test.v output),
// since a failing suite fails the test that runs it.
func TestBrokenStoresAreCaught(t *testing.T) {
	t.Parallel()
	if os.Getenv(faultEnv) != "" {
		t.Skip("already inside a child process")
	}
	require.Len(t, targets, len(brokenstores.Faults()), "every fault needs a target case")
	for _, fault := range brokenstores.Faults() {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			target := targets[fault]
			failed, out, err := runChild(t, fault)
			require.Error(t, err, "the suite passed a store with fault %s:\n%s", fault, out)
			require.True(t, slices.Contains(failed, target),
				"fault %s was not caught by %s; the suite failed in %v:\n%s", fault, target, failed, out)
			t.Logf("%s: caught by %s; every failing case: %s", fault, target, strings.Join(failed, ", "))
		})
	}
}

// failLine matches a failing case of the suite (scenario/case) in -test.v
// output.
var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenStore/(\S+/\S+) `)

// runChild runs the suite against fault in a child process and returns the
// cases that failed, the process's output and its exit error.
func runChild(t *testing.T, fault brokenstores.Fault) (failed []string, out string, err error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0],
		"-test.run=^TestBrokenStore$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), faultEnv+"="+fault.String())
	b, err := cmd.CombinedOutput()
	for _, m := range failLine.FindAllStringSubmatch(string(b), -1) {
		failed = append(failed, m[1])
	}
	slices.Sort(failed)
	return failed, string(b), err
}
