package brokenstores

// Fault is a deliberate defect in a [Store]. Each one breaks exactly one
// guarantee that the conformance suite checks, the way a real adapter might.
type Fault uint8

// Faults. None is the correct store every other fault starts from.
const (
	// None: the store keeps every guarantee.
	None Fault = iota
	// ConsumesOnDenial charges a denied check anyway: an exhausted window
	// takes the cost (up to the limit) and a key refused for capacity is
	// stored.
	ConsumesOnDenial
	// NotAtomic persists the checks of a denied batch that came before the
	// failing one.
	NotAtomic
	// EvictsLiveKeys makes room for a new key by evicting the counter that
	// expires first, active or not.
	EvictsLiveKeys
	// IgnoresCapacity stores every new key, however full.
	IgnoresCapacity
	// RenewsEarly treats a window as over one millisecond before its end.
	RenewsEarly
	// RenewsLate treats a window as still running for one millisecond after
	// its end.
	RenewsLate
	// NoKeyLocks guards its map but releases the lock between reading the
	// counters and writing them back, so racing checks lose updates.
	NoKeyLocks
	// ClockBackwards reads a clock that steps back one second on every
	// other admission, and does not clamp it.
	ClockBackwards
	// ReordersAllowances sorts a batch's keys to lock them and then pairs the
	// sorted keys with the batch's checks by position, so each check reads
	// and charges another check's counter.
	ReordersAllowances
)

// Faults returns every deliberate defect, None excluded.
func Faults() []Fault {
	return []Fault{
		ConsumesOnDenial, NotAtomic, EvictsLiveKeys, IgnoresCapacity, RenewsEarly,
		RenewsLate, NoKeyLocks, ClockBackwards, ReordersAllowances,
	}
}

// String returns the fault's name, as used to select it in a child test
// process.
func (f Fault) String() string {
	switch f {
	case None:
		return "None"
	case ConsumesOnDenial:
		return "ConsumesOnDenial"
	case NotAtomic:
		return "NotAtomic"
	case EvictsLiveKeys:
		return "EvictsLiveKeys"
	case IgnoresCapacity:
		return "IgnoresCapacity"
	case RenewsEarly:
		return "RenewsEarly"
	case RenewsLate:
		return "RenewsLate"
	case NoKeyLocks:
		return "NoKeyLocks"
	case ClockBackwards:
		return "ClockBackwards"
	case ReordersAllowances:
		return "ReordersAllowances"
	}
	return "unknown"
}

// ParseFault returns the fault named s.
func ParseFault(s string) (Fault, bool) {
	for _, f := range append(Faults(), None) {
		if f.String() == s {
			return f, true
		}
	}
	return None, false
}
