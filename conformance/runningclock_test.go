package conformance_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	bs "github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

// runningClockEnv, in a child process, names the precision of the running
// clock the child's store reads.
const runningClockEnv = "RUNLIMIT_CONFORMANCE_RUNNING_CLOCK"

// A store over a server's clock (Redis TIME, a database's) passes its
// durations as bounds: each may fall short by the real time its case has
// taken. A Redis store reading TIME cut to whole milliseconds failed one
// run in four that way; the case written for it fails it in every run,
// and passes the same store on a clock that keeps microseconds.
func TestRunningClockCutToMillisecondsIsCaught(t *testing.T) {
	if precision := os.Getenv(runningClockEnv); precision != "" {
		unit := time.Microsecond
		if precision == "ms" {
			unit = time.Millisecond
		}
		conformance.Run(t, func(_ testing.TB, opts conformance.Options) conformance.Instance {
			clock := new(conformance.ManualClock)
			origin := time.Now()
			now := func() time.Duration { return clock.Now() + time.Since(origin).Truncate(unit) }
			s := bs.New(bs.Config{Capacity: opts.Capacity, Clock: now})
			return conformance.Instance{Store: s, Advance: clock.Advance}
		})
		return
	}
	t.Parallel()
	const target = "time/running_clock_moves_by_the_real_time_between_checks"
	for _, tc := range []struct {
		precision string
		caught    bool
	}{{"us", false}, {"ms", true}} {
		t.Run(tc.precision, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run", "^TestRunningClockCutToMillisecondsIsCaught$/^"+target+"$", "-test.v")
			cmd.Env = append(os.Environ(), runningClockEnv+"="+tc.precision)
			out, err := cmd.CombinedOutput()
			if !tc.caught {
				require.NoError(t, err, "a store on a running clock that keeps microseconds passes:\n%s", out)
				require.Contains(t, string(out), "--- PASS: TestRunningClockCutToMillisecondsIsCaught/"+target)
				return
			}
			require.Error(t, err, "a store on a running clock cut to milliseconds must fail:\n%s", out)
			require.Contains(t, string(out), "--- FAIL: TestRunningClockCutToMillisecondsIsCaught/"+target)
			require.Contains(t, string(out), "a clock read or kept in whole milliseconds drops a millisecond at once")
		})
	}
}
