package peers

import (
	"strconv"
)

// Limiter is one contender's keyed limiter, in the shape every benchmark
// drives: allow one event for a subject.
type Limiter interface {
	// Allow checks one event for the i-th subject given to the
	// constructor. It reports false when the event is denied or the
	// library failed.
	Allow(i int) bool
	// AllowSubject checks one event for subject s, doing all of the key
	// work from s itself, as a service does with a client's address.
	AllowSubject(s string) bool
	// Counted returns an exact reading of s's counter: the difference
	// between two readings is the number of events allowed for s in
	// between. A reading may count a check of its own (Runlimit's store
	// has no read-only view), which it leaves out of every later reading.
	// Not safe for concurrent use with itself.
	Counted(s string) (int64, error)
	// Tracked returns how many keys the library holds, when it says.
	Tracked() (n int, ok bool)
	// Close releases the library's goroutines and memory.
	Close()
}

// Contender is one library under comparison.
type Contender struct {
	// ID names the contender in benchmark names and CSV files.
	ID string
	// Label names it for people, in charts and tables.
	Label string
	// New builds a fresh limiter for subjects, which Allow indexes. It may
	// derive keys from them up front.
	New func(subjects []string) (Limiter, error)
}

// Contender ids.
const (
	RunlimitHMAC   = "runlimit-hmac"
	Runlimit       = "runlimit"
	RunlimitCoarse = "runlimit-coarse"
	XTime          = "xtime"
	GoLimiter      = "golimiter"
	Ulule          = "ulule"
	Throttled      = "throttled"
)

// Contenders returns every contender, Runlimit's first.
func Contenders() []Contender {
	return []Contender{
		{ID: RunlimitHMAC, Label: "Runlimit, HMAC key derived per check", New: newRunlimitHMAC},
		{ID: Runlimit, Label: "Runlimit, key derived once", New: newRunlimitOnce},
		{ID: RunlimitCoarse, Label: "Runlimit, key derived once, CoarseClock", New: newRunlimitCoarse},
		{ID: XTime, Label: "x/time/rate in a mutex map", New: newXTime},
		{ID: GoLimiter, Label: "sethvargo/go-limiter memorystore", New: newGoLimiter},
		{ID: Ulule, Label: "ulule/limiter v3 memory store", New: newUlule},
		{ID: Throttled, Label: "throttled/v2 GCRA memstore", New: newThrottled},
	}
}

// Label returns the label of contender id, or id itself when no contender
// has it.
func Label(id string) string {
	for _, c := range Contenders() {
		if c.ID == id {
			return c.Label
		}
	}
	return id
}

// Subject returns the i-th benchmark subject, shaped like a client id a
// service keys on.
func Subject(i int) string { return "client-" + strconv.Itoa(i) }

// Subjects returns subjects first to first+n-1.
func Subjects(first, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = Subject(first + i)
	}
	return s
}
