package brokenstores

// Fault is a deliberate defect in a [Store]. Each one breaks one guarantee
// that the conformance suite checks, the way a real adapter might: an
// off-by-one at a window's end, a count kept in a float64, a lock released
// too early, a cache that outlives a write.
type Fault uint16

// Faults, grouped by the class of bug. None is the correct store every
// other fault starts from.
const (
	// None: the store keeps every guarantee.
	None Fault = iota

	// Time boundaries and precision.

	// RenewsEarly treats a window as over one millisecond before its end.
	RenewsEarly
	// RenewsLate treats a window as still running for one millisecond after
	// its end.
	RenewsLate
	// InclusiveEnd treats a window as still running at exactly its end
	// (now <= expires instead of now < expires).
	InclusiveEnd
	// SlidesWindow moves a window's end to now+window on every allowed
	// check.
	SlidesWindow
	// RenewsAtOldEnd renews an expired window from its old end rather than
	// from the renewing check.
	RenewsAtOldEnd
	// StoresMilliseconds keeps window times truncated to milliseconds while
	// its clock reads microseconds.
	StoresMilliseconds
	// StoresSeconds keeps window times truncated to whole seconds.
	StoresSeconds
	// IgnoresInjectedClock reads the process's clock instead of the one it
	// was given.
	IgnoresInjectedClock
	// ClockBackwards reads a clock that steps back one second on every
	// other admission, and does not clamp it.
	ClockBackwards
	// EpochAlignedWindows anchors each new window at the last multiple of
	// the window's length since the clock's epoch, as a store keying its
	// counters by floor(now/window) does, rather than at the first check.
	EpochAlignedWindows
	// SingleCheckReusesLastTime evaluates AdmitCheck at the latest time any
	// admission read, as a coarse clock that only batches tick would,
	// instead of reading the clock.
	SingleCheckReusesLastTime
	// TrustsInjectedClock reads its clock without clamping it, trusting a
	// clock that only ever moves forward: when the clock steps back, so do
	// its windows.
	TrustsInjectedClock

	// Expiry and the store's own bookkeeping.

	// CleanupKeepsReadCache serves reads through a cache that a write
	// updates but cleanup's delete leaves behind: a removed counter last
	// read by a denial is served again, and its key renews "in place" in a
	// slot it no longer holds.
	CleanupKeepsReadCache
	// ReclaimTakesBatchKeySlot gives a new key in a full partition the slot
	// of an expired counter it removes on the way, even one the batch has
	// read and renews in place, so the batch writes both back.
	ReclaimTakesBatchKeySlot
	// CleanupSweepsCurrentMillisecond removes counters by whole-millisecond
	// expiry buckets, the current one included, so a counter ending later
	// in this millisecond is removed while still active.
	CleanupSweepsCurrentMillisecond

	// Counters serialised through other types.

	// FloatCounts keeps counts in a float64.
	FloatCounts
	// Int32Counts keeps counts in an int32.
	Int32Counts
	// FloatMicroseconds keeps window times as float64 microseconds.
	FloatMicroseconds
	// JSONRoundTrip stores each counter as JSON and reads it back into a
	// map[string]any, whose numbers are float64.
	JSONRoundTrip
	// ChargesOneUnit counts one unit per allowed check, whatever its cost.
	ChargesOneUnit
	// WindowInt32Millis keeps a window's length as an int32 count of
	// milliseconds (an `integer` column) and stores its end as the start
	// plus that length.
	WindowInt32Millis
	// StoresUnixNanos keeps window times as Unix nanoseconds (an int64
	// column or a Redis score written from time.Time.UnixNano), which
	// overflow for a window ending after the year 2262.
	StoresUnixNanos

	// Keys.

	// KeysBySubjectOnly keys counters by the subject key alone, so every
	// policy of a subject shares one counter.
	KeysBySubjectOnly
	// KeysByPolicyID keys counters by policy id, scope and subject, leaving
	// the limit and window out.
	KeysByPolicyID
	// KeysWithoutScopePerPartition keeps a map of counters in each
	// partition, picked by the whole counter key, and keys each map by
	// policy id, limit, window and subject, leaving the scope out: two
	// scopes share a counter only when they share a partition.
	KeysWithoutScopePerPartition
	// ShadowSeparateCounter keys a shadow-mode check's counter apart from
	// the enforced policy's, as if the mode were part of the fingerprint.
	ShadowSeparateCounter
	// BatchReadsBySubject reads a batch's counters into a map keyed by
	// subject key, so that a batch naming one subject under two policies
	// reads the first policy's counter for both (and writes each to its
	// own key).
	BatchReadsBySubject

	// Renewal.

	// ExpiredNeedsSlot renews an expired counter as if it were a new key,
	// needing a free slot.
	ExpiredNeedsSlot
	// RenewalTakesSlot keeps its occupancy in a slot counter of its own,
	// apart from the counters it stores (which Stats counts), and adds one
	// to it each time it renews an expired counter in place: every renewal
	// leaks a slot that no cleanup gives back.
	RenewalTakesSlot
	// RenewalKeepsCount renews an expired window at the renewing check but
	// carries the old window's count into it, as an UPDATE that moves the
	// window and adds the cost to used without resetting it would.
	RenewalKeepsCount

	// Caching of reads and decisions.

	// CachesReads serves a counter read earlier at the same instant from a
	// cache that its own writes do not update.
	CachesReads
	// CachesBatches remembers what each set of keys read at an instant and
	// serves a repeated batch from that memory.
	CachesBatches
	// SingleCheckCache serves AdmitCheck from a cache that only AdmitCheck
	// writes, so batches' writes are invisible to it.
	SingleCheckCache

	// Ordering.

	// ReordersAllowances sorts a batch's keys to lock them and then pairs the
	// sorted keys with the batch's checks by position, so each check reads
	// and charges another check's counter.
	ReordersAllowances
	// WritesInLockOrder reads each check's own counter but writes the new
	// counters to the keys in lock order.
	WritesInLockOrder
	// CallerOrderLocks locks a batch's keys in the caller's order, so two
	// batches naming the same keys in opposite orders can deadlock.
	CallerOrderLocks
	// LockOrderByPolicy sorts a batch's keys by their policy fingerprint
	// alone, keeping the caller's order among one policy's keys.
	LockOrderByPolicy
	// PartitionLocksInKeyOrder locks the partition of every key instead
	// of the key, once each, in the order of the keys rather than of the
	// partitions: two batches whose keys sort in opposite partition orders
	// can deadlock.
	PartitionLocksInKeyOrder

	// Locking.
	// ClockReadBeforeLocks reads its clock when an admission begins, before
	// it takes its locks, and evaluates at that time: an admission that
	// waited for a lock while time moved on decides at a time that has
	// passed, so it anchors a window that ends early, reports a reset or
	// retry time longer than the window has left, and counts into a window
	// that has already ended.
	ClockReadBeforeLocks

	// ReleasesLockBeforeWrite decides under its locks, releases them, and
	// takes them again to write.
	ReleasesLockBeforeWrite
	// OptimisticCountOnly is an optimistic store (read without locks,
	// decide at the clock, write only if nothing read has changed, else
	// start again) whose write condition compares the count alone, as a
	// conditional write on `used = :old` does: a counter renewed since it
	// was read, back at the count it had, passes the condition, and a
	// second renewal of one expired window overwrites the first.
	OptimisticCountOnly
	// OptimisticVersionRestarts is an optimistic store whose write
	// condition compares a row version that starts again at 1 when a
	// counter is created, as an item or row whose version is set on insert
	// does: a counter that cleanup removed and another check created anew
	// since it was read is back at the version read, so the held write
	// lands on it and the other check's unit is lost (ABA).
	OptimisticVersionRestarts
	// ReleasesLockBeforeDeciding reads under its locks, releases them to
	// read the clock and decide, and takes them again to write.
	ReleasesLockBeforeDeciding
	// SingleCheckOwnLock guards AdmitCheck with a lock of its own instead of
	// the key's, so a single check and a batch on one key overlap.
	SingleCheckOwnLock
	// ReadsBeforeLocking reads the counters, then takes the locks to decide
	// and write.
	ReadsBeforeLocking
	// LocksFirstKeyOnly locks only the first key of a batch.
	LocksFirstKeyOnly
	// ProceedsWhenLockBusy tries each lock once and goes on without the ones
	// it did not get.
	ProceedsWhenLockBusy
	// ShadowSkipsLocks takes no key lock for a shadow-mode admission, as if
	// shadow checks were only advisory, so overlapping shadow checks lose
	// updates.
	ShadowSkipsLocks
	// StripeLockedTwice locks 1,024 lock stripes instead of keys, one
	// stripe per key in stripe order, without taking a stripe that two
	// keys share only once: a batch with two keys on one stripe waits on
	// itself until its lock wait times out, and fails.
	StripeLockedTwice
	// LocksBySubject locks a lock per subject key instead of per counter
	// key, once per check: a batch naming one subject under two policies
	// takes that subject's lock twice and waits on itself forever.
	LocksBySubject

	// Partial writes.

	// NotAtomic persists the checks of a denied batch that came before the
	// failing one.
	NotAtomic
	// WritesBeforeDeciding adds every check's cost to its counter before
	// evaluating, and on a denial takes back only the failing check's.
	WritesBeforeDeciding
	// WritesOnShadowDenial persists a batch whenever the request may
	// proceed, a shadow denial included.
	WritesOnShadowDenial
	// ConsumesOnDenial charges a denied check anyway: an exhausted window
	// takes the cost (up to the limit) and a key refused for capacity is
	// stored.
	ConsumesOnDenial
	// SingleCheckIgnoresCommit writes the new counter on AdmitCheck whether
	// or not the check was allowed.
	SingleCheckIgnoresCommit

	// Capacity accounting.

	// IgnoresCapacity stores every new key, however full.
	IgnoresCapacity
	// EvictsLiveKeys makes room for a new key by evicting the counter of its
	// partition that expires first, active or not.
	EvictsLiveKeys
	// OverfillsInBatch gives each new key of a batch the partition's free
	// slots as if it were alone.
	OverfillsInBatch
	// KeepsSlotsOfDeniedBatch keeps the slots a denied batch's new keys
	// claimed.
	KeepsSlotsOfDeniedBatch
	// BoundCountsActiveOnly counts only active counters against the bound,
	// while expired ones stay stored.
	BoundCountsActiveOnly
	// GlobalBound bounds the counters of the whole store, not of each
	// partition.
	GlobalBound
	// AnyFullPartitionRefuses refuses every new key while any partition is
	// full.
	AnyFullPartitionRefuses
	// SingleCheckOrphanedRenewal runs AdmitCheck optimistically, as
	// OptimisticSingleChecks does, but when cleanup has removed the expired
	// counter it read before its write, it writes the renewal to that
	// removed entry (as a store that swaps an entry's state in place
	// without a tombstone does) and reports it allowed: the unit is lost.
	SingleCheckOrphanedRenewal
	// BatchRenewalClaimsSlot claims a free slot for each expired key a
	// batch of several checks renews, though it renews in place, so a new
	// key of the same batch can find its partition full.
	BatchRenewalClaimsSlot
	// CapacityRetryFirstKeyPartition gives a batch's capacity denial the
	// earliest expiry of the partition of the batch's first key, as a store
	// that looks the retry time up once per batch does.
	CapacityRetryFirstKeyPartition
	// BatchClaimsShared counts the slots a batch's new keys claim in one
	// tally for every partition (stored[p] + pending >= capacity), so a
	// new key in one partition takes a slot of every other.
	BatchClaimsShared
	// UnguardedCapacity locks a new key but not its partition, so new keys
	// racing for the same free slots all see them free.
	UnguardedCapacity
	// CapacityRetryLatest gives a capacity denial the latest expiry in the
	// partition as its retry time.
	CapacityRetryLatest
	// CapacityRetryAnyPartition gives a capacity denial the earliest expiry
	// in the whole store, not in the key's partition, as its retry time.
	CapacityRetryAnyPartition
	// CapacityRetryFirstWindow gives a capacity denial the earliest expiry
	// its partition's counters had when they were first stored, as an
	// expiry index that renewals in place do not update would.
	CapacityRetryFirstWindow
	// ShadowIgnoresCapacity admits a shadow check's new key into a full
	// partition.
	ShadowIgnoresCapacity
	// SingleCheckIgnoresCapacity admits a new key into a full partition on
	// the AdmitCheck path.
	SingleCheckIgnoresCapacity

	// Cleanup.

	// CleanupRemovesActive removes the counters that expire first, expired
	// or not.
	CleanupRemovesActive
	// CleanupIgnoresMax removes every expired counter, however few it was
	// asked to remove.
	CleanupIgnoresMax
	// CleanupNegativeMeansAll reads a negative maximum as no maximum.
	CleanupNegativeMeansAll
	// CleanupNegativeUntyped rejects a negative maximum with an error of its
	// own rather than one matching ports.ErrNegativeMax.
	CleanupNegativeUntyped
	// CleanupKeepsSlots removes counters but their partition keeps counting
	// them.
	CleanupKeepsSlots
	// CleanupFreesTwice frees two slots for each counter it removes.
	CleanupFreesTwice
	// CleansActivePerCheck removes, on each check, the counter of the
	// check's partition that expires first, expired or not.
	CleansActivePerCheck
	// PerCheckCleanupKeepsSlots removes expired counters on each check, as
	// the memory store does, but their partition keeps counting them.
	PerCheckCleanupKeepsSlots
	// CleanupMaxPerPartition applies CleanupExpired's maximum to each
	// partition rather than to the call.
	CleanupMaxPerPartition
	// CleanupKeepsCounterAtEnd leaves a counter at exactly its window's end
	// (expires < now instead of expires <= now).
	CleanupKeepsCounterAtEnd
	// CleanupTypedNilError returns a nil *Error as its error when it
	// removed nothing: a typed nil, which is not a nil error.
	CleanupTypedNilError
	// CleanupContextBeforeZero checks whether its context is done before it
	// answers a zero maximum, so a done context turns a no-op into an
	// error.
	CleanupContextBeforeZero
	// CleanupIgnoresContext never looks at its context, so it removes
	// counters for a caller that has already given up.
	CleanupIgnoresContext
	// CleanupContextBeforeNegative checks its context before the maximum,
	// so a done context hides the caller's negative maximum.
	CleanupContextBeforeNegative
	// CleanupNilContextBeforeNegative checks for a nil context before the
	// maximum, so a nil context hides the caller's negative maximum.
	CleanupNilContextBeforeNegative
	// CleanupZeroSkipsClosed answers a zero maximum with (0, nil) before it
	// looks at whether the store is closed.
	CleanupZeroSkipsClosed
	// CleanupLocksPartitionsDescending holds every partition lock while it
	// cleans, taken from the highest partition down, so it deadlocks with
	// an admission that takes them upwards.
	CleanupLocksPartitionsDescending
	// CleanupDeletesWithoutRecheck collects the expired counters in one
	// step and deletes them in a second, waiting for each key's lock, without
	// looking again: a counter renewed in between is deleted with its new
	// count (SELECT ... WHERE expires <= now, then DELETE ... WHERE key IN).
	CleanupDeletesWithoutRecheck
	// CleanupDropsKeyLock removes an expired counter together with its
	// key's entry in the lock table, without trying the lock, as if no
	// admission could hold the lock of an expired key: the renewal that
	// holds it and the next check of the key, which makes a new lock, both
	// write the key.
	CleanupDropsKeyLock
	// CleanupHoldsClockLock samples the store's clock under the clock's
	// mutex, which admissions take after their key locks, and keeps it
	// while it waits for each expired key's lock to delete it: a
	// store-wide lock taken before the key locks by cleanup and after them
	// by admissions.
	CleanupHoldsClockLock
	// CleanupStaleExpiryIndex picks the counters to remove from an expiry
	// index that renewals in place do not update, and removes them without
	// reading their current window: a renewed counter is removed while it
	// is active.
	CleanupStaleExpiryIndex

	// Stats.

	// StatsCountActiveOnly leaves expired counters out of Stats.
	StatsCountActiveOnly
	// StatsMisindexed reports partition i's headroom at index
	// partitions-1-i.
	StatsMisindexed
	// StatsEntriesNeverShrink reports as Stats.Entries the number of
	// counters ever inserted (an insert statistic such as pg_stat's
	// n_tup_ins), which removals never lower.
	StatsEntriesNeverShrink

	// Close.

	// IgnoresClose keeps serving after Close.
	IgnoresClose
	// PanicsWhenClosed panics on an admission after Close.
	PanicsWhenClosed
	// ClosedErrorMayHaveConsumed fails closed with an error that does not
	// say nothing was consumed.
	ClosedErrorMayHaveConsumed
	// ClosedErrorNamesKey fails closed with an error that prints the key.
	ClosedErrorNamesKey
	// ClosedErrorUntyped fails closed with an error of its own rather than
	// one matching ports.ErrClosed.
	ClosedErrorUntyped
	// ClosedBeforeNilContext answers Admit and AdmitCheck on a closed store
	// with ports.ErrClosed before it looks at a nil context, hiding the
	// caller's mistake.
	ClosedBeforeNilContext
	// ClosedBeforeCheckValidation answers AdmitCheck on a closed store with
	// ports.ErrClosed before it validates the check, hiding the caller's
	// mistake.
	ClosedBeforeCheckValidation
	// DoneContextBeforeClosed answers Admit and AdmitCheck on a closed store
	// with the context's error when the context is done, instead of
	// ports.ErrClosed: a caller shutting down on ErrClosed never hears it.
	DoneContextBeforeClosed

	// Context.

	// PanicsOnNilContext calls its context's methods without checking it
	// for nil, so Admit, AdmitCheck and CleanupExpired panic on a nil
	// context.
	PanicsOnNilContext
	// NilContextUntyped refuses a nil context with an error of its own
	// rather than one matching domain.ErrInvalidInput.
	NilContextUntyped
	// StatsPanicsOnNilContext calls Stats's context's methods without
	// checking it for nil.
	StatsPanicsOnNilContext
	// IgnoresDoneContext never looks at its context on Admit and
	// AdmitCheck, so it admits for a caller that has already given up.
	IgnoresDoneContext
	// DoneContextRawError refuses a done context with the context's own
	// error, which does not say that nothing was consumed.
	DoneContextRawError
	// DoneContextErrorNamesKey refuses a done context with an error whose
	// message names the counter key in hex.
	DoneContextErrorNamesKey
	// DoneContextErrorKeyField refuses a done context with a [KeyError],
	// whose message is clean but whose exported field holds the counter
	// key, for json.Marshal or spew to print.
	DoneContextErrorKeyField
	// DoneContextErrorKeyBase32 refuses a done context with an error whose
	// message names the counter key in base32, as a store that keys its
	// backend by base32 text does.
	DoneContextErrorKeyBase32
	// DoneContextErrorKeyQuoted refuses a done context with an error whose
	// message quotes the subject key's raw bytes with %q, escaped as
	// "\x9a\x1b...".
	DoneContextErrorKeyQuoted
	// DoneContextErrorKeySpacedHex refuses a done context with an error
	// whose message names the subject key in hex split by spaces (% x).
	DoneContextErrorKeySpacedHex
	// DoneContextErrorLockID refuses a done context with an error naming
	// a lock id made of 8 bytes of the subject key read as an int64, in
	// decimal, where a lock id should hash the key.
	DoneContextErrorLockID
	// DoneContextErrorKeyString refuses a done context with a
	// [KeyStringError], whose message is clean but whose exported string
	// field holds the counter key's raw bytes, for %#v to print quoted.
	DoneContextErrorKeyString
	// DoneContextErrorKeyShortID refuses a done context with an error
	// naming the subject key by a short id, its first 6 bytes in hex, as
	// Docker names a container: a key shown in part is still shown.
	DoneContextErrorKeyShortID
	// LateCancelUnconsumed looks at its context again after it has written
	// an admission's counters and, when it is done by then, reports the
	// context's error as one that consumed nothing.
	LateCancelUnconsumed

	// Batches handed to Admit directly.

	// SkipsBatchReady never calls Batch.Ready, so it panics on a nil or
	// unprepared batch.
	SkipsBatchReady
	// ClosedBeforeBatchReady answers Admit on a closed store with
	// ports.ErrClosed before it looks at the batch, hiding the caller's
	// mistake.
	ClosedBeforeBatchReady

	// The single-check path.

	// SingleCheckSkipsValidation answers an invalid check on AdmitCheck with
	// a zero decision and no error.
	SingleCheckSkipsValidation

	// Found by the fifth blind hunt.

	// CancelBetweenWrites looks at its context between the writes of a
	// committed batch and, when it is done, stops there and reports the
	// context's error as one that consumed nothing: the keys written
	// before it stay counted.
	CancelBetweenWrites
	// CancelKeepsClaimedSlots looks at its context once it has decided
	// which new keys get a slot and, when it is done, gives up, consuming
	// nothing, but counts the slots it claimed as taken: no key fills them.
	CancelKeepsClaimedSlots
	// NilContextBeforeBatchReady answers a nil context before it calls
	// Batch.Ready, hiding a batch that is not ready behind the nil context.
	NilContextBeforeBatchReady
	// ReadyAfterClose answers Ready with nil after Close.
	ReadyAfterClose
	// ReadyAdmitsProbe proves it is ready by admitting a check of a probe
	// key of its own, which takes a capacity slot.
	ReadyAdmitsProbe
	// SingleCheckSharedReads reads a single check's counter into one
	// buffer the store keeps for every AdmitCheck, to save an allocation,
	// guarded by the store's short mutex but not by the key's lock: checks
	// of different keys that overlap decide on whichever counter was read
	// last.
	SingleCheckSharedReads
	// ClockReadAfterFirstLock samples its clock once it holds the first of
	// an admission's key locks, and takes the others after, as
	// ClockReadBeforeLocks does before all of them: a check of a batch's
	// later key can count between the sample and the batch, which then
	// counts that key at a time that had passed. (A single check's first
	// lock is its only one.)
	ClockReadAfterFirstLock
	// CreatesAfterRelock locks the partitions of an admission's keys, in
	// ascending order, instead of the keys, and decides under those locks,
	// but writes an admission that creates a counter only after dropping
	// and retaking them, as a store that allocates a new entry outside its
	// lock does: a waiter reads the key as absent in between. Admissions
	// of stored keys write under the locks they decided under.
	CreatesAfterRelock

	// Found by the sixth blind hunt: stores built on the idioms of
	// key-value and SQL backends, whose keys live by a time to live kept
	// apart from the window they count in.

	// TTLSetOnCreateOnly gives a key a time to live, its window rounded up
	// to whole seconds (EXPIRE), only when it creates the key (INCRBY, then
	// EXPIRE when the count is new), and reads a key past it as deleted: a
	// window renewed in place before the backend deleted the key keeps the
	// first window's time to live, and loses its count early.
	TTLSetOnCreateOnly
	// ReadsTTLInWholeMillis reads a counter's end as now plus its time left
	// in whole milliseconds (PTTL): in a window's last millisecond it finds
	// none left, and renews an active window.
	ReadsTTLInWholeMillis
	// ExpiresAtWholeMillis gives a key an absolute expiry in whole
	// milliseconds (PEXPIREAT), its window's end rounded down, and reads a
	// key past it as deleted: a window that ends between two milliseconds
	// loses its count early.
	ExpiresAtWholeMillis
	// BatchTTLFromFirstCheck gives every key a batch creates or renews the
	// time to live of the batch's first check's window (a script that
	// passes PEXPIRE the first argument for every key), and reads a key
	// past it as deleted.
	BatchTTLFromFirstCheck
	// CapacityRetryRefreshedTTL reports a capacity denial's retry time
	// from its keys' time to live, which every write of a key sets to a
	// window from that write, rather than from the windows' ends.
	CapacityRetryRefreshedTTL
	// CapacityRetryWholeSeconds reports a capacity denial's retry time
	// rounded up to whole seconds, as a time to live read with TTL is.
	CapacityRetryWholeSeconds
	// CapacityRetrySamePolicy looks for a full partition's earliest expiry
	// among the refused check's own policy's counters only, as a query on
	// an index of policy and expiry does.
	CapacityRetrySamePolicy
	// ClampsOnlyOnCommit clamps its clock by the latest time an admission
	// wrote at, not the latest it read: after a denial, a clock that steps
	// back lets the key's time left grow.
	ClampsOnlyOnCommit
	// ClampKeepsRawTime returns the clamped time but keeps the clock's own
	// reading as the latest: after a clock steps back, the first read is
	// clamped and the next goes back.
	ClampKeepsRawTime
	// ClampsFirstPartitionOnly keeps a clamp per partition and clamps an
	// admission by its first key's partition alone: a batch whose first
	// key's partition saw only earlier times moves its other keys'
	// windows back.
	ClampsFirstPartitionOnly
	// SingleCheckOwnClamp clamps AdmitCheck's clock by a latest time of its
	// own, which batches neither read nor raise.
	SingleCheckOwnClamp
	// BatchCappedAtCapacity refuses, as too large, a batch with more checks
	// than one partition holds, though its keys spread over partitions
	// fit.
	BatchCappedAtCapacity
	// DoneContextErrorKeyBytea refuses a done context with an error that
	// names the subject key as PostgreSQL prints a bytea in its escape
	// format: printable bytes as they are, others as a backslash and three
	// octal digits.
	DoneContextErrorKeyBytea
	// CleanupFreesSlotOfRenewed collects expired counters, then deletes
	// each under its key's lock only if it is still expired (a conditional
	// delete), but frees its slot in a second write whatever the delete
	// did: a counter renewed in between keeps its slot, and the partition
	// counts one fewer.
	CleanupFreesSlotOfRenewed

	// Found by the seventh blind hunt: the fields a store returns, and
	// buffers and reports it keeps from one call to the next.

	// CapacityRetryOwnWindow takes a capacity denial's retry time as the
	// partition's earliest window start plus the refused check's window,
	// as if every counter of the partition had that window.
	CapacityRetryOwnWindow
	// CapacityRetryKeptFromLastDenial keeps a capacity denial's retry time
	// in a buffer it reuses, and recomputes it only from active counters:
	// in a full partition whose counters have all expired, it answers the
	// retry time of the last denial, another partition's.
	CapacityRetryKeptFromLastDenial
	// CapacityRoundedToPowerOfTwo sizes each partition to the next power
	// of two of its capacity, as a store with a power-of-two hash table
	// that counts slots by its size does, and admits that many keys.
	CapacityRoundedToPowerOfTwo
	// StatsReusesHeadroom returns every Stats report's headroom in one
	// slice it keeps and refills on the next call, to save an allocation.
	StatsReusesHeadroom
	// StatsCachesReport hands out its last report again, headroom slice
	// and all, while the counts it reports are unchanged, as a store whose
	// stats are costly to gather caches them: a caller that writes into a
	// report changes what the store reports next.
	StatsCachesReport
	// CloseReleasesCounters drops its counters on Close without waiting
	// for admissions in flight, which then write into nothing and panic.
	CloseReleasesCounters
	// ClosedErrorIsInvalidInput refuses an admission on a closed store
	// with an error that matches domain.ErrInvalidInput beside
	// ports.ErrClosed, as if calling a closed store were the caller's
	// mistake.
	ClosedErrorIsInvalidInput
	// DoneContextCause refuses a done context with context.Cause(ctx)
	// rather than ctx.Err(): for a context ended with a cause, that matches
	// only the cause.
	DoneContextCause
	// CleanupLowersClamp reads the clock in CleanupExpired without the
	// clamp and stores what it read as the latest time: after cleanup, a
	// clock that has stepped back moves every window back.
	CleanupLowersClamp

	// Keys reduced for speed (the eighth hunt).

	// KeysByHash64 keeps its counters in a map keyed on the counter key's
	// 64-bit Hash64 and trusts a match without comparing the whole key: two
	// subject keys that share their first eight bytes share a counter.
	KeysByHash64
	// KeysBySubjectSuffix keys counters by the fingerprint, the subject
	// key's first byte (its capacity shard) and its last sixteen bytes,
	// taken as uniform enough: subject keys that differ only in bytes 1 to
	// 15 share a counter.
	KeysBySubjectSuffix
	// KeysXorFolded keys counters by the 64-byte counter key folded to
	// eight bytes by XOR of its words: keys whose differences cancel in the
	// fold share a counter.
	KeysXorFolded
	// KeysByFingerprintXorSubject keys counters by the fingerprint XOR the
	// subject key (32 bytes, "both already uniform"): a subject under one
	// policy and its XOR with the two fingerprints under another share a
	// counter.
	KeysByFingerprintXorSubject
	// KeysByFingerprintFirstByte keys counters by the subject key and the
	// fingerprint's first byte only (the byte the capacity shard is made
	// of): two policies whose fingerprints begin alike share a subject's
	// counter.
	KeysByFingerprintFirstByte
	// NewKeyBySubjectSeen decides whether a key is new by whether its
	// subject key is stored under any policy (a filter of subjects): a
	// stored subject's counter under another policy takes a slot without
	// checking that one is free.
	NewKeyBySubjectSeen
	// NewKeyByHash64Seen decides whether a key is new by whether a stored
	// key has its Hash64: a key whose hash matches a stored one's takes a
	// slot without checking that one is free.
	NewKeyByHash64Seen

	// Found by the ninth blind hunt: indexes that break only after a
	// partition has seen many keys come and go.

	// TombstonesFillTable indexes each partition in an open-addressing
	// table of twice its capacity whose deleted cells are tombstones no
	// insertion reuses: after that many insertions a new key finds no
	// cell, takes its slot and is stored nowhere, so it is new again at
	// its next check.
	TombstonesFillTable
	// ProbeStopsAtDeletedCell indexes each partition in an open-addressing
	// table hashed by the policy's fingerprint alone, so a policy's keys
	// share one probe chain, and ends a lookup at the first deleted cell:
	// once cleanup removes a key, the active keys stored behind it are
	// lost.
	ProbeStopsAtDeletedCell
	// SlotFreedTwiceWhenEmpty keeps each partition's counters in a slot
	// array with a free list, and frees the last counter's slot a second
	// time when the partition empties: its next two new keys share one
	// slot, and the first is lost.
	SlotFreedTwiceWhenEmpty
	// AllocatorRestartsWhenEmpty keeps each partition's counters in a
	// slot array served by a free list and a bump allocator, and restarts
	// the allocator at slot 0 when the partition empties but keeps its
	// free list: once the free list is used up, the allocator hands out
	// slots that hold counters.
	AllocatorRestartsWhenEmpty
	// CleanupFiltersHeapInPlace keeps each partition's ends in a binary
	// min-heap and takes a capacity denial's retry time from its top, but
	// cleanup filters removed counters out of the heap's array in place,
	// keeping the order of the rest, without sifting again: once counters
	// went in out of order, the top is not the earliest end.
	CleanupFiltersHeapInPlace

	// Found by the tenth blind hunt: keys a store builds from a policy's
	// fields, and counters of one subject under several policies.

	// KeysByInt32Limit keys counters by a fingerprint of its own over the
	// policy id, scope, the limit as an int32 (an `integer` column) and the
	// window: limits alike in their low 32 bits share a subject's counter.
	KeysByInt32Limit
	// KeysByFloatLimit keys counters by a fingerprint of its own with the
	// limit read back from a float64 (a JSON number): limits above 2^53
	// that round alike share a subject's counter.
	KeysByFloatLimit
	// KeysByInt32WindowMillis keys counters by a fingerprint of its own
	// with the window as an int32 count of milliseconds: windows alike in
	// their low 32 bits share a subject's counter.
	KeysByInt32WindowMillis
	// KeysByJoinedText keys counters by the text "id:scope:limit:window"
	// (a Redis key): identifiers may hold ':', so a policy id ending in ':'
	// and a scope beginning with it share a subject's counter.
	KeysByJoinedText
	// KeysByUnseparatedFields keys counters by a SHA-256 of the policy's
	// fields with no separator between the id and the scope, so a
	// character moved from one to the other shares a subject's counter.
	KeysByUnseparatedFields
	// KeysByFingerprintPrefix keys counters by the subject key and the
	// fingerprint's first four bytes (a short id of eight hex digits):
	// fingerprints that begin alike share a subject's counter.
	KeysByFingerprintPrefix
	// KeysByFingerprintSuffix keys counters by the subject key and the
	// fingerprint's last four bytes: fingerprints that end alike share a
	// subject's counter.
	KeysByFingerprintSuffix
	// NewKeysClaimBySubject counts the slots a batch's new keys claim by
	// subject: a subject's second new counter in the batch (a policy whose
	// limit changed, say) claims none, so the batch overfills its partition.
	NewKeysClaimBySubject
	// NewKeysClaimByPolicy counts the slots a batch's new keys claim per
	// policy fingerprint, as a store with a table per policy would: new
	// keys of two policies in one batch each see only their own policy's
	// claims, and overfill their partition.
	NewKeysClaimByPolicy
	// CleanupRemovesSubject removes, with each expired counter, the
	// subject's active counters under other policies, as a delete by
	// subject key would.
	CleanupRemovesSubject

	// Found by the twelfth blind hunt: results and error paths.

	// SingleCheckDecisionBesideError keeps the last decision AdmitCheck
	// returned, to hand back without a copy, and returns it beside every
	// error: after an allowed check, a failed one carries a permit.
	SingleCheckDecisionBesideError
	// LateCancelDecisionBesideError drops the write of a single check
	// whose context was cancelled after its evaluation, and returns the
	// decision it computed beside the context's error.
	LateCancelDecisionBesideError
	// StatsBesideClosedError reports its occupancy on a closed store beside
	// ports.ErrClosed, as if the report were still worth reading.
	StatsBesideClosedError
	// SingleCheckErrorUntyped refuses an invalid single check with an error
	// of its own that matches domain.ErrInvalidInput but is not the
	// check's *domain.CheckError, so errors.As cannot say what is wrong.
	SingleCheckErrorUntyped
	// NilContextBeforeCheckValidation answers a nil context before it
	// validates a single check, so an invalid check beside a nil context
	// is reported as the context.
	NilContextBeforeCheckValidation
	// DoneContextBeforeCheckValidation answers a done context before it
	// validates a single check, so an invalid check is reported as the
	// caller having given up.
	DoneContextBeforeCheckValidation
	// DoneContextBeforeBatchReady answers a done context before it asks
	// Batch.Ready, so a nil, unprepared or already evaluated batch is
	// reported as the context.
	DoneContextBeforeBatchReady
	// DoneContextErrorMatchesClosed runs each admission under a context
	// merged from the caller's and the store's own, and reports it done as
	// the store being closed: its error matches ports.ErrClosed on an open
	// store.
	DoneContextErrorMatchesClosed
	// DoneContextErrorKeyLittleEndianHex names the counter's slot in a
	// done context's error: eight subject key bytes read little-endian and
	// printed in hex.
	DoneContextErrorKeyLittleEndianHex
	// DoneContextErrorKeyDecimal names the subject in a done context's
	// error as one big decimal integer (math/big over the subject key).
	DoneContextErrorKeyDecimal
	// DoneContextErrorKeyWords names the counter's bucket in a done
	// context's error as two 32-bit words of the subject key in decimal.
	DoneContextErrorKeyWords
	// Found by the eleventh blind hunt: numbers and time at the edges.

	// ClampToleratesJitter lets the clock step back by up to ten
	// milliseconds unclamped, as jitter, and clamps only larger steps: a
	// small step back moves the windows back with it.
	ClampToleratesJitter
	// ClampComparesMilliseconds compares the clock with its latest time in
	// whole milliseconds: a step back within the latest millisecond passes
	// unclamped.
	ClampComparesMilliseconds
	// CapacityRetryCappedAtDay caps a capacity denial's retry time at a
	// day, as a store that bounds its Retry-After does.
	CapacityRetryCappedAtDay
	// CapacityRetryFloatUnixMicros takes a capacity denial's retry time
	// from an expiry index whose scores are float64 microseconds since the
	// Unix epoch (a sorted set's scores): exact until 2255, when 2^53 µs
	// is passed, and rounded to an even microsecond after.
	CapacityRetryFloatUnixMicros
	// FloatUnixMicroseconds keeps window times as float64 microseconds
	// since the Unix epoch (a document store's numbers): a window ending
	// after 2255, past 2^53 µs, ends on an even microsecond.
	FloatUnixMicroseconds
	// DeadlineFloatUnixSeconds treats a key as deleted once its deadline,
	// kept as float64 seconds since the Unix epoch (a sorted-set score),
	// is not after the time in the same form: past 2^33 s (year 2242) one
	// float64 holds about two microseconds, so a window ending then is
	// deleted in its last microsecond.
	DeadlineFloatUnixSeconds

	// Admissions that wait for a lock (the thirteenth hunt).

	// FreeSlotsCountedBeforeKeyLocks reads each partition's count of
	// stored counters under the partition's lock, in a short hold of its
	// own, before it takes its key locks, and decides its new keys' slots
	// on those counts: an admission that then waits for a key lock another
	// holds finds, once it has it, a slot that a new key admitted
	// meanwhile has filled, and leaves the partition one counter over its
	// bound.
	FreeSlotsCountedBeforeKeyLocks
	// CleanupGathersByPartition locks each admission's partitions, stored
	// keys' too, as a sharded store does, and cleans up in two passes: it
	// collects expired counters partition by partition under each
	// partition's lock, then removes them without looking again. A counter
	// collected from one partition and renewed while cleanup waits for a
	// later partition's lock is removed with its admitted unit.
	CleanupGathersByPartition
	// CleanupGatherFreesAnyway is CleanupGathersByPartition with a second
	// look before each removal, but the slot freed whatever that look
	// finds: a counter renewed while cleanup waited keeps a slot the
	// partition no longer counts, and the partition takes one key too many.
	CleanupGatherFreesAnyway

	// Bookkeeping of slots and retry times (the fourteenth hunt).

	// CapacityRetryActiveOnly takes a capacity denial's retry time from
	// the partition's active counters only, skipping an ended counter
	// that still holds its slot: it names the end of the earliest active
	// counter where the partition's earliest expiry has already passed.
	CapacityRetryActiveOnly
	// BatchRenewalClaimsSlotPerCheck is BatchRenewalClaimsSlot on a store
	// that removes expired counters on each check: a batch's renewal of
	// an expired key claims a free slot, which shows only when no other
	// expired counter is removed on the way to free one.
	BatchRenewalClaimsSlotPerCheck
	// StatsEntriesActiveAtLastAdmission, on a store that removes two
	// expired counters on each check, counts Stats.Entries as the counters
	// active at the latest admission's time (Stats reads no clock), while
	// its headroom counts the slots held: after a check that removed only
	// some of a partition's expired counters, the entries fall short of
	// the slots held.
	StatsEntriesActiveAtLastAdmission

	// Clock reads per command (the fifteenth hunt).

	// StampsWithSecondClockRead judges a batch at its clock sample but
	// stamps each window it anchors with a second clock read made for the
	// write, as a port of a key-value design that asks the server for the
	// time per command does: when time moves between the two, a batch
	// counts one key in a window that has since ended and anchors another
	// after that end.
	StampsWithSecondClockRead

	// Calls around failures and Close (lifecycle).

	// StatsCachedAfterClose keeps the last report Stats returned and serves it
	// beside the closed error after Close.
	StatsCachedAfterClose
	// StatsBesideContextError looks at a done context only once its report is
	// built, and returns the report beside the context's error.
	StatsBesideContextError
	// StatsContextBeforeClosed answers a done context before a closed store,
	// so Stats after Close with a done context does not say closed.
	StatsContextBeforeClosed
	// StatsClosedBeforeNilContext answers a closed store before a nil
	// context, so Stats(nil) after Close hides the caller's mistake.
	StatsClosedBeforeNilContext
	// StatsCountRefusedAdmission reserves a new key's slot before it looks at
	// the context and never gives it back when the admission is refused:
	// Stats counts counters that were never stored.
	StatsCountRefusedAdmission
	// CleanupCutShortReportsNone removes one counter a round and answers a
	// context that ends between rounds with (0, ctx.Err()), hiding what it
	// removed.
	CleanupCutShortReportsNone
	// ReadyNilContextNil answers Ready(nil) with nil, taking a nil context for
	// one without a deadline.
	ReadyNilContextNil
	// ReadyIgnoresDoneContext answers Ready with nil on an open store whatever
	// the context.
	ReadyIgnoresDoneContext
	// ReadyStickyAfterCancel marks itself unhealthy when a call is refused for
	// a done context, and Ready fails from then on.
	ReadyStickyAfterCancel
	// ReadyContextBeforeClosed answers a done context before a closed store,
	// so Ready after Close with a done context does not say closed.
	ReadyContextBeforeClosed

	// Per-check cleanup (sweep.go).
	// SweepSparesWindowEndingNow removes expired counters on each check,
	// earliest expiry first, but takes a counter as expired only once its
	// end has passed (expires < now), so a window ending exactly now keeps
	// its slot through the admission.
	SweepSparesWindowEndingNow
	// SweepsFirstCheckOnly removes expired counters for a batch's first
	// check only, on that check's partition, as a store that cleans once
	// per admission would: a later check's partition keeps its ended
	// counters' slots.
	SweepsFirstCheckOnly

	// Extents, cleanup's clock and keys removed during a wait (hunt19.go).

	// CleanupMaxNarrowedToInt32 converts CleanupExpired's max to an int32
	// (a 32-bit LIMIT parameter, a Lua number cast): a max beyond 32 bits
	// wraps to zero, a negative number or a small one, and cleanup removes
	// none or too few of the expired counters.
	CleanupMaxNarrowedToInt32
	// CapacityRetrySamplesNewest names a capacity denial's retry time from
	// a sample of the partition's eight newest counters, as a store that
	// samples instead of keeping an expiry index does: in a partition of
	// more counters, the earliest end may lie outside the sample.
	CapacityRetrySamplesNewest
	// CleanupReadsUnclampedClock reads the clock for CleanupExpired
	// without the clamp admissions read through: after the clock steps
	// back, cleanup keeps a counter the store has already seen end.
	CleanupReadsUnclampedClock
	// NewKeysJudgedBeforeLocks reads which keys of an admission are stored
	// before it takes its locks, and claims a slot only for those it read
	// as new: a key that cleanup removes while the admission waits for a
	// lock comes back without a slot, one counter beyond the bound.
	NewKeysJudgedBeforeLocks
	// NewKeysJudgedBeforePartitionLocks is NewKeysJudgedBeforeLocks in a
	// store whose admissions take the partition locks of all their keys and
	// whose cleanup removes counters under partition locks alone, reading
	// its clock with the first one held: a key cleanup removes while a
	// batch waits for that lock comes back without a slot.
	NewKeysJudgedBeforePartitionLocks
	// CleanupChunksWithoutRecheck, in the store of
	// NewKeysJudgedBeforePartitionLocks without that defect, collects a
	// partition's ended counters under its lock, then removes them one
	// chunk at a time, yielding the lock to waiting admissions between
	// chunks, without looking again: a counter renewed in between is
	// removed.
	CleanupChunksWithoutRecheck
	// A key-value port's text keys, clock replies and scans (kvport.go).

	// KeysDropControlBytes keys each counter by text made of its key's
	// bytes with control characters and spaces dropped, as a port to
	// memcached, whose keys may hold none, does: subject keys differing
	// only in such a byte share a counter.
	KeysDropControlBytes
	// KeysFoldBase64Case keys each counter by the base64 of its 64 bytes,
	// lowercased, as a column or collation that ignores case does: keys
	// whose base64 differs only in a letter's case share a counter.
	KeysFoldBase64Case
	// ClockJoinsSecondsAndMicros reads its clock as a server's reply of
	// whole seconds and microseconds joined as text (Redis TIME, "s" ..
	// "us" in Lua), so a time whose microseconds have fewer than six
	// digits reads far too small, and the clamp holds the store's time
	// still.
	ClockJoinsSecondsAndMicros
	// CleanupSkipsAfterRemoval steps over the expired counter after each
	// it removes, as a loop over a list it deletes from does: one call
	// removes about half of what it may.
	CleanupSkipsAfterRemoval
	// BatchStepsPerKeyWithRefund runs a batch as one single-key step per
	// check, in caller order, each under its key's lock alone, as a port
	// to a store that cannot script keys of several slots together does,
	// and when a step is denied takes back what the earlier steps wrote:
	// a racing check of an earlier key sees the batch's unit in between.
	BatchStepsPerKeyWithRefund

	// Faults of a SQL store's author (hunt20.go).

	// LockOrderBySubjectKey sorts a batch's keys by their subject key
	// alone before it locks them (SELECT ... ORDER BY subject_key FOR
	// UPDATE), keeping the caller's order among equal subject keys: one
	// subject's counters under two tiers of a policy (one policy id and
	// scope, another limit or window) share a subject key, so two batches
	// naming both tiers in opposite orders can deadlock.
	LockOrderBySubjectKey
	// ClampedClockBeforeLocks reads its clock, through the store's clamp,
	// when an admission begins, before it takes its locks (a transaction's
	// start time, raised to the latest time the store has handed out), and
	// decides at that time without reading the clock again: an admission
	// that waited for another's write decides at a time from before it.
	ClampedClockBeforeLocks

	// Faults of an adapter author who gets concurrency and cancellation
	// subtly wrong (hunt21.go).

	// ClampRacyReadModifyWrite keeps its latest time in one word for the
	// whole store, raised in three steps that are not one atomic step:
	// load it, read the clock, store the larger. An admission that loaded
	// it before a racing admission on another key stored a later time
	// stores its own, older one over it, and once the clock steps back a
	// window is anchored before a time the store already handed out.
	ClampRacyReadModifyWrite
	// CancelledCheckGoesOn runs a single check's admission on a goroutine
	// of its own and answers the caller when its context ends, with the
	// context's error, which says nothing was consumed, while the
	// admission goes on and counts once it gets its lock.
	CancelledCheckGoesOn
	// CancelledWaitKeepsEarlierLocks waits for each key lock watching its
	// context and, when the context ends, gives up without releasing the
	// locks it already took: every later admission of those keys waits
	// for ever.
	CancelledWaitKeepsEarlierLocks
	// CancelledWaitDropsLockEntry waits for each key lock watching its
	// context and, when the context ends, drops the lock table's entry of
	// the key it waited for, as if it were the lock's last user: the next
	// admission of the key makes a new lock and reads the counter while
	// the holder still decides, and an update is lost.
	CancelledWaitDropsLockEntry
	// CancelledWaitKeepsLocks looks at its context once it holds every
	// lock it waited for and, when it ended meanwhile, returns the
	// context's error without releasing them.
	CancelledWaitKeepsLocks
	// CancelledWaitAnswersNothing looks at its context once a single
	// check holds its lock and, when it ended meanwhile, answers no error
	// and the zero decision: a decision it never made.
	CancelledWaitAnswersNothing
	// CancelledWaitOwnError looks at its context once it holds every lock
	// it waited for and, when it ended meanwhile, answers an error of its
	// own ("lock wait abandoned") that does not match the context's, so a
	// host cannot tell a caller that left from a failing backend.
	CancelledWaitOwnError

	// Faults of a blind adapter author, each a one-line slip (hunt22.go).
	//
	// WritesThroughInversePermutation sorts a batch's keys for its writes
	// and maps each sorted position back through the inverse of the sort
	// permutation: right for two keys, whose swap is its own inverse, and
	// for a batch in key order; three keys in a cyclic order get each
	// other's counts.
	WritesThroughInversePermutation
	// CleanupTakesLastMicrosecond removes counters ending at or before the
	// next microsecond: an active counter in its last microsecond.
	CleanupTakesLastMicrosecond
	// PerCheckTakesLastMicrosecond cleans on each check, as the memory
	// store does, and takes counters ending at or before the next
	// microsecond: a full partition evicts an active counter in its last
	// microsecond to admit a new key.
	PerCheckTakesLastMicrosecond
	// CleanupLeavesClampBelow reads the clamped time for its cleanup but
	// does not raise the clamp to it: after the clock steps back, a key
	// the cleanup removed is anchored before the cleanup's time.
	CleanupLeavesClampBelow
	// SortsOnlyPairs sorts a batch's keys for its locks when it has two,
	// and takes the locks of a longer batch in caller order: opposite-order
	// pairs never deadlock, rotations of three keys do.
	SortsOnlyPairs
	// StatsLocksPartitionsDescending takes every partition lock for its
	// report, from the highest down, where admissions take them upwards.
	StatsLocksPartitionsDescending

	// Faults of the twenty-third blind hunt (hunt23.go).

	// BatchRenewalSlides moves the end of an active window that a batch of
	// two or more checks counts to a window after the batch's time, as a
	// batch script that calls PEXPIRE on every key does; single checks
	// keep the end the window was anchored with.
	BatchRenewalSlides
	// ClockMutexBeforeLocks reads and clamps its clock under a store-wide
	// mutex before it takes an admission's locks (the key locks, then the
	// partition locks of every key), and decides at that time; its cleanup
	// takes each partition's lock and then reads the clock through the same
	// mutex. A cleanup that takes a partition's lock while an admission
	// holds the mutex in its clock read runs first, and the admission then
	// decides, at its earlier time, on what the cleanup left.
	ClockMutexBeforeLocks

	// Faults of the twenty-fourth blind hunt (hunt24.go).

	// AnswersAtLaterClockRead decides and writes an admission at its clock
	// sample, with its locks held, and then reads the clock again to judge
	// what it read for the caller's decision, as a store whose backend
	// returns the stored counts and whose client judges them at its own
	// time after the call: an admission that counted in a window ending
	// meanwhile answers that it renewed it.
	AnswersAtLaterClockRead
	// AnswersAtFirstAttempt admits optimistically and, when its first
	// attempt finds a counter changed and a later attempt stands, answers
	// from the first attempt's clock sample over what the later attempt
	// read: a renewal it wrote is answered as the old window, full.
	AnswersAtFirstAttempt
	// CapacityRetrySkipsBatchKeys takes a capacity denial's retry time
	// from the partition's counters that the batch does not name, though
	// the batch's own stored counters, which a denied batch leaves as they
	// were, end in that partition as well.
	CapacityRetrySkipsBatchKeys

	// Replicas: state that each store value over a shared backend keeps of
	// its own, right for one replica and wrong for two.

	// ReplicaCountsOwnSlots counts the slots each replica takes and frees
	// itself, from the counts it found when it opened, so that two
	// replicas each admit new keys up to the bound.
	ReplicaCountsOwnSlots
	// ReplicaLocksInProcess locks keys and partitions with mutexes in the
	// replica's own process, so that two replicas both "lock" one key and
	// one loses the other's update.
	ReplicaLocksInProcess
	// ReplicaCachesOwnWrites serves the counter a replica last wrote, for
	// as long as the stored window is the one it wrote, so that it never
	// sees the units another replica counted in that window.
	ReplicaCachesOwnWrites
	// ReplicaClampsOwnClock keeps the floor under the clock per replica,
	// so that a replica whose clock is behind another's decides at a time
	// before the one the other anchored a window at.
	ReplicaClampsOwnClock
	// ReplicaCleansOwnKeys removes, in CleanupExpired, only the expired
	// counters its own replica created.
	ReplicaCleansOwnKeys

	// Faults of the twenty-fifth blind hunt (hunt25.go).

	// WindowSecondsTruncated keeps a window's length as float64 seconds
	// and turns it back into a duration with time.Duration(secs) *
	// time.Second, which drops the fraction: a window of 1.5 s lasts 1 s,
	// one under a second not at all.
	WindowSecondsTruncated
	// TimesFloatSecondsTruncated keeps window times as float64 seconds
	// since the epoch and reads them back as int64(secs * 1e6)
	// microseconds, which truncates 2.9999999999999996 to 2: some window
	// ends come back a microsecond early.
	TimesFloatSecondsTruncated
	// WindowEndRoundedUpToMillis stores a window's end rounded up to the
	// next whole millisecond (a PEXPIREAT given a ceiling), while its
	// start keeps its microseconds: a window lasts up to a millisecond
	// too long.
	WindowEndRoundedUpToMillis
	// CapacityRetryTruncatedToMillis reports a capacity denial's retry
	// time cut down to a whole millisecond, as a store whose expiry index
	// is scored in milliseconds does: the retry comes before the slot is
	// free.
	CapacityRetryTruncatedToMillis
	// OptimisticRetryKeepsOccupancy admits every batch optimistically and
	// reads its partitions' occupancy once, on its first attempt: a retry
	// after a conflict judges new keys against slots another admission
	// has taken since.
	OptimisticRetryKeepsOccupancy
	// OptimisticRetryDecidesOnFirstRead admits every batch optimistically
	// and, after a conflict, conditions its write on a fresh read but
	// decides on what its first attempt read: the units counted between
	// the two are lost.
	OptimisticRetryDecidesOnFirstRead
	// OptimisticComparesWindowOnly admits every batch optimistically with
	// a conditional write that compares each counter's window times but
	// not its count: two admissions in one window both stand, and one's
	// units are lost.
	OptimisticComparesWindowOnly
	// WriteBehindStats reports Stats from the backend a write-behind cache
	// flushes to at the start of the next admission: the latest
	// admission's new counters are missing from the report.
	WriteBehindStats
	// WriteBehindCleanup judges in CleanupExpired which counters have
	// ended from the backend a write-behind cache flushes to at the start
	// of the next admission, and deletes them from the cache: a counter
	// the latest admission renewed is removed while active.
	WriteBehindCleanup
	// CapacityPerProcess counts each partition's occupancy in a table kept
	// for the whole process, shared by every store value in it (a
	// package-level variable), rather than per store.
	CapacityPerProcess
	// KeysCutAtNulByte keys each counter by its key's bytes up to the
	// subject key's first zero byte, as a store passing keys to C as
	// strings does: subject keys that agree up to a zero byte share a
	// counter.
	KeysCutAtNulByte
	// KeysCutTo50Bytes keys each counter by the first 50 bytes of its key,
	// as a key column or a backend key limit that truncates does.
	KeysCutTo50Bytes
	// KeysFoldRawCase keys each counter by its raw bytes with ASCII
	// letters folded to lower case, as a binary key kept in a
	// case-insensitive text column is compared.
	KeysFoldRawCase
	// StatsCachedPerInstant serves Stats from the report it built last
	// while the store's clock reads the same instant, as a report cached
	// for a clock tick: an admission in that instant is not in it.
	StatsCachedPerInstant
	// LateCancelDropsWriteAnswersAllowed, when the context ends after the
	// evaluation of an admission that commits, rolls its write back and
	// returns no error, so the caller reads an allowance nothing paid for.
	LateCancelDropsWriteAnswersAllowed
	// CleanupCountsSkipped returns the number of expired counters it
	// found, counting those it skipped because an admission held them.
	CleanupCountsSkipped
	// CleanupStopsAtLockedKey stops at the first expired counter an
	// admission holds and returns what it removed until then, fewer than
	// asked, though expired counters it could remove remain.
	CleanupStopsAtLockedKey
	// SingleCheckStoresMillis writes the counters of AdmitCheck with their
	// window times cut to whole milliseconds, while Admit keeps their
	// microseconds: the two paths disagree.
	SingleCheckStoresMillis
	// WriteBehindBatches buffers the counters a batch of two or more
	// checks writes and flushes them at the start of the next batch;
	// AdmitCheck reads the backend without flushing, and a later flush
	// overwrites what it wrote.
	WriteBehindBatches
	// AnchorsAtLastSeenTime anchors a new or renewed window at the latest
	// time the store had seen before the admission (the server time of
	// its previous round trip), while it judges at its fresh clock read:
	// after time passes, a window starts, and ends, early.
	AnchorsAtLastSeenTime
	// StatsHeadroomSpread reports every partition's headroom as the store's
	// free slots spread evenly over its partitions, as a store counting
	// only its total does.
	StatsHeadroomSpread
	// KeysAsJSONStrings keys each counter by its key's bytes made a Go
	// string and encoded as JSON (a document store's key or field name),
	// which replaces every byte that is not UTF-8 with U+FFFD: keys that
	// differ only in such bytes share a counter.
	KeysAsJSONStrings

	// The faults of the twenty-sixth blind hunt (hunt26.go).

	// RetryKeepsFirstClock admits every batch optimistically, as a SQL
	// store retrying on a serialization failure does, and evaluates and
	// writes a retried attempt at the clock its first attempt read.
	RetryKeepsFirstClock
	// KeysByWindowSeconds keys each counter by its policy with the window
	// in whole seconds, as a Redis key "id:scope:limit:secs" does:
	// policies whose windows differ below a second share a counter.
	KeysByWindowSeconds
	// KeysWithoutLimit keys each counter by its policy without the limit,
	// so that an operator can change a limit "live" without resetting the
	// counters: the new policy counts on in the old one's window.
	KeysWithoutLimit
	// KeysWithoutWindow keys each counter by its policy without the
	// window: a policy whose window changes keeps its old window.
	KeysWithoutWindow
	// DoneContextDeadlineOnly refuses a done context only when its
	// deadline passed, as a store that turns the deadline into a statement
	// timeout and never looks at cancellation does: a cancelled context
	// is admitted.
	DoneContextDeadlineOnly
	// DoneContextCanceledOnly refuses a done context only when it was
	// cancelled: a context whose deadline passed is admitted.
	DoneContextCanceledOnly
	// SingleCheckIgnoresClose admits AdmitCheck on a closed store; Admit
	// fails closed.
	SingleCheckIgnoresClose
	// SingleCheckIgnoresDoneContext admits AdmitCheck with a done context;
	// Admit refuses it.
	SingleCheckIgnoresDoneContext
	// StatsCapacityPerPartition reports one partition's capacity as the
	// store's, as a ledger's "rows per shard" setting read as the total.
	StatsCapacityPerPartition
	// StatsHeadroomSortedByFill reports the partitions' headroom ordered
	// from the most free to the least, as a ledger query ORDER BY
	// row_count does, not by partition index.
	StatsHeadroomSortedByFill
	// StatsHeadroomExcludesExpired reports an expired counter's slot as
	// free in the headroom, though it holds its slot until it is removed
	// (Entries still counts it).
	StatsHeadroomExcludesExpired
	// StatsShardsNonEmpty reports as Shards the number of partitions that
	// hold at least one counter, as a ledger query WHERE row_count > 0.
	StatsShardsNonEmpty
	// SharedObservationBuffer reads an admission's counters into one
	// buffer for the whole store, a scratch slice kept on the store to
	// save allocations, guarded for each write and each read but not from
	// the read, across the clock read, to the evaluation: a concurrent
	// admission evaluates another's counters.
	SharedObservationBuffer
	// DenialRollsBackOwnShardOnly runs a batch as a two-phase commit over
	// its partitions' backends and, when a check is denied, rolls back
	// only the denied check's partition: checks before it on other
	// partitions stay consumed.
	DenialRollsBackOwnShardOnly
	// ClockRefreshedEveryFourth reads the backend's clock on every fourth
	// admission only and reuses the latest reading in between, as a store
	// saving a round trip does: after time passes, a window runs on.
	ClockRefreshedEveryFourth
	// CleanupSkipsLastPartition lets CleanupExpired walk partitions 0 to
	// n-2 of n (n > 1): an off-by-one that leaves the last partition's
	// expired counters while it reports fewer than asked.
	CleanupSkipsLastPartition
	// ConflictRetryReappliesWrite admits every batch optimistically and,
	// when the conditional write conflicts, treats it as a commit that
	// failed after it applied: the attempt's units are added to what it
	// read, and the retry adds them again.
	ConflictRetryReappliesWrite
	// CapacityClaimsInKeyOrder hands a batch's free slots to its new keys
	// in ascending key order, as the locks are taken, not in caller order:
	// the check reported full is not the first one beyond the free slots.
	CapacityClaimsInKeyOrder

	// The faults of the twenty-seventh blind hunt (hunt27.go).

	// CleanupStopsAtFirstActive walks the counters in the order they were
	// created, as a cleanup reading a log of creations (a Redis list, a
	// serial id) does, and stops at the first one still active, taking
	// windows to end in the order they began: an expired counter created
	// after a longer window, or after a renewed one, stays.
	CleanupStopsAtFirstActive
	// CleanupCutoffTakesTies removes every expired counter ending no later
	// than the max-th earliest end, as DELETE WHERE expires <= (SELECT
	// expires ... OFFSET max-1 LIMIT 1) does: counters ending together at
	// the cut-off are all removed, beyond max.
	CleanupCutoffTakesTies
	// CleanupOffByOneMax removes up to max+1 expired counters (for removed
	// <= max).
	CleanupOffByOneMax
	// CleanupAtWholeMilliseconds removes the counters that ended by the
	// cleanup's time truncated to the millisecond, as WHERE expires <=
	// date_trunc('milliseconds', now()) does: a counter that ended earlier
	// in the current millisecond stays, though the call removes fewer than
	// it may.
	CleanupAtWholeMilliseconds
	// RenewalChargesOneUnit starts a window that renews an ended one with a
	// count of 1, whatever the check's cost, as an upsert ported from a
	// cost-one script (CASE WHEN expired THEN 1 ELSE used + cost) does; a
	// new key and an active window count the cost.
	RenewalChargesOneUnit
	// BatchNewKeysChargeOneUnit creates the new keys of a batch of two or
	// more with a count of 1, whatever their costs, as a batch script
	// copied from a cost-one version does; single checks count the cost.
	BatchNewKeysChargeOneUnit
	// RenewalInsertIgnoresConflict writes an absent or ended window as an
	// INSERT ... ON CONFLICT DO NOTHING: a renewal of an ended counter that
	// cleanup has not removed yet writes nothing, and every check is
	// allowed until cleanup runs.
	RenewalInsertIgnoresConflict
	// StartRoundedUpToMillis keeps a window's start in a millisecond
	// column (timestamp(3)) rounded up, and its end exact: a check in the
	// start's millisecond is told the window resets sooner than it does.
	StartRoundedUpToMillis
	// RenewalKeepsStart renews an ended window with an UPDATE that sets
	// the count and the end but forgets the start column: the stored
	// window is longer than its policy's.
	RenewalKeepsStart
	// KeysByPrintedSubject keys each counter by fmt.Sprintf("%v/%v") of its
	// fingerprint and subject key, and a subject key prints redacted:
	// every subject of a policy shares one counter.
	KeysByPrintedSubject
	// ConfigColumnsResetOnChange keys each row by policy id, scope and
	// subject, with the limit and window in columns of their own; a check
	// whose limit or window differs from the row's takes the row over and
	// starts it afresh, so policies alike but for the limit or window
	// reset each other's counters and share one slot.
	ConfigColumnsResetOnChange
	// ModeSwitchResetsCounter keeps the quota mode in a column beside the
	// counter and starts the counter afresh when a check in the other
	// mode reads it: switching a policy from shadow to enforce forgets
	// what shadow mode counted.
	ModeSwitchResetsCounter
	// ShadowDeniedKeepsClaimedSlots reserves slots for a batch's new keys
	// and hands them back only when the batch is refused: a shadow-denied
	// batch, which lets the request through, writes nothing but keeps the
	// slots.
	ShadowDeniedKeepsClaimedSlots
	// ShadowKeysTakeNoSlot writes a shadow check's new counter but does not
	// charge its slot to the capacity ledger, taking shadow mode for a dry
	// run: shadow keys fill a partition beyond its bound, and their
	// removal frees slots they never took.
	ShadowKeysTakeNoSlot
	// PartitionByFingerprintOnly counts a key's slot in the partition of
	// its fingerprint's first byte, forgetting the XOR with the subject
	// key's that PartitionOf (and PostgreSQL's ledger) applies.
	PartitionByFingerprintOnly
	// ExpiredResetBeforeDeciding starts every ended window a batch reads
	// afresh, with its check's cost, before the domain decides, as a
	// script that "resets stale keys" first does: a batch refused by
	// another check leaves those windows started and counted.
	ExpiredResetBeforeDeciding
	// KeysFoldIdentifierCase keys each counter by its policy with the
	// policy id and scope in lower case, as key columns under a
	// case-insensitive collation (MySQL's default) compare them:
	// identifiers are case-sensitive, and policies differing only in case
	// share a counter.
	KeysFoldIdentifierCase
	// KeysSanitizeIdentifiers keys each counter by its policy with every
	// '-', '.', ':' and '/' of the policy id and scope replaced by '_', as
	// a store making them safe for a key or table name does: "a.b" and
	// "a_b" share a counter.
	KeysSanitizeIdentifiers
	// KeysCleanScopePath keys each counter by its policy with the scope
	// read as a path and cleaned (path.Clean): scopes "t/1/" and "t/1",
	// or "t//1", share a counter.
	KeysCleanScopePath
	// CapacityPerPolicy bounds each partition per policy, as a ledger keyed
	// by shard and fingerprint does: counters of other policies in a
	// partition leave a new key's policy its whole bound there.
	CapacityPerPolicy
	// BatchInclusiveEnd treats a window as still active at its very end in
	// batches of two or more checks, as a multi-key script comparing
	// expires >= now does, while single checks renew there.
	BatchInclusiveEnd

	// The faults of the twenty-eighth blind hunt (hunt28.go).

	// LongWindowTTLReadAsAbsolute keeps each counter in memcached with its
	// window as a relative TTL, and memcached reads a TTL over 30 days as a
	// Unix time, long past: a counter of a longer window is gone at once,
	// and its policy never denies.
	LongWindowTTLReadAsAbsolute
	// TTLWholeSecondsDropsEarly sets each counter's TTL on creation to its
	// window in whole seconds, rounded down, as memcached's integer TTLs
	// take it: a window of 1.5 s is gone after 1 s, and its key starts
	// afresh half a second early.
	TTLWholeSecondsDropsEarly
	// ActiveUntilTTLSecond reads a counter as running until its TTL
	// attribute, its end in epoch seconds rounded up, has passed, as a
	// DynamoDB read filtering on ttl >= now does: a window ending inside a
	// second keeps denying until that second ends.
	ActiveUntilTTLSecond
	// CleanupByTTLSeconds removes the counters whose TTL attribute, their
	// end in epoch seconds rounded up, has passed: a counter that ended
	// inside the current second stays, though the call removes fewer than
	// it may.
	CleanupByTTLSeconds
	// CleanupCappedAt25PerCall removes at most 25 expired counters a call,
	// what one DynamoDB BatchWriteItem takes, whatever max asks, and
	// returns that count: a call asked for more removes fewer while
	// expired counters remain, and a loop draining the store stops early.
	CleanupCappedAt25PerCall
	// CreateWithoutAbsentCondition runs every admission as a conditional
	// write that compares the keys it read as stored but writes a key it
	// read as absent unconditionally (an etcd put without create_revision
	// == 0, a memcached set instead of add): two admissions creating one key
	// both commit, and the later overwrites the earlier's count.
	CreateWithoutAbsentCondition
	// IncrementNarrowedToInt32 adds each check's cost as MongoDB's $inc with
	// NumberInt does, narrowed to 32 bits, while the count itself is 64-bit:
	// a cost beyond 2^31-1 wraps.
	IncrementNarrowedToInt32
	// StartTruncatedToSeconds keeps a window's start in SQLite's datetime
	// text, whole seconds, and its end in microseconds: a window starting
	// inside a second reads back longer than its policy's.
	StartTruncatedToSeconds
	// StatsEntriesDistinctSubjects reports Entries as the number of
	// distinct subjects stored, as a HyperLogLog of subject keys estimates
	// it: one subject under two policies is one entry.
	StatsEntriesDistinctSubjects
	// CapacityCountsDistinctSubjects bounds each partition by the distinct
	// subjects it holds, as a per-partition HyperLogLog of subjects does: a
	// subject already counted there takes no new slot for another policy,
	// and the partition overfills.
	CapacityCountsDistinctSubjects
	// DoneContextMayHaveConsumed answers a done context with an error whose
	// MayHaveConsumedQuota is true, as a store mapping every context error
	// to the commit-timeout case does, though nothing was tried.
	DoneContextMayHaveConsumed
	// TransactionSplitAt25 writes a batch of more than 25 checks as DynamoDB
	// transactions of 25 items, each decided and committed before the next:
	// a check refused in a later chunk leaves the earlier chunks counted.
	TransactionSplitAt25
	// WriteBackLRUDropsEvicted keeps counters in a write-back LRU of 64
	// entries in front of its backend and drops an evicted entry without
	// flushing it: a live counter pushed out by 64 others starts afresh.
	WriteBackLRUDropsEvicted
	// ActiveUntilLeaseMinTTL keeps each counter under an etcd lease of its
	// window and reads a key that still exists as running: etcd raises a
	// TTL below its minimum (1.5 s by default), so a window shorter than
	// that keeps denying until the lease runs out.
	ActiveUntilLeaseMinTTL
	// BatchWriteDropsUnprocessed writes an allowed batch through one
	// DynamoDB BatchWriteItem call, which takes 25 items and returns the
	// rest unprocessed, and does not send those again: a batch of more than
	// 25 checks is allowed, but its checks past the 25th are not counted.
	BatchWriteDropsUnprocessed

	// The faults of the twenty-ninth blind hunt (hunt29.go).

	// DenialCacheIgnoresCost keeps a local "denied until the window
	// resets" note for each key a single check was refused on, and refuses
	// every later single check of the key until then, whatever its cost,
	// though a cheaper check may still fit.
	DenialCacheIgnoresCost
	// DenialCachedForRetrySeconds keeps the same note, for checks of the
	// cost refused, until the refusal's Retry-After in whole seconds has
	// passed: past the window's end, the renewed window is refused too.
	DenialCachedForRetrySeconds
	// CleanupReturnsExamined returns how many counters a cleanup call
	// examined (up to max) instead of how many it removed.
	CleanupReturnsExamined
	// StatsCountsUpsertRowsAffected keeps its entry count by adding each
	// write's rows affected, as MySQL's INSERT ... ON DUPLICATE KEY UPDATE
	// reports them (1 for an insert, 2 for an update), less 1: a renewal in
	// place is counted as one more entry.
	StatsCountsUpsertRowsAffected
	// SubjectHashSharedTTL keeps a subject's counters as fields of one
	// Redis hash and sets the hash's PEXPIRE on every write: the hash, and
	// every policy's counter in it, lapses at the end of the window last
	// written, though another policy's window runs longer.
	SubjectHashSharedTTL
	// ExpireGivenMilliseconds sets a counter's lifetime with EXPIRE (whole
	// seconds) given the window in milliseconds: a window lives a thousand
	// times its length.
	ExpireGivenMilliseconds
	// BatchPerSlotScripts runs a batch as one script per Redis Cluster
	// hash slot (here, per partition): each partition's checks are decided
	// and written on their own, so a denial in a later partition leaves
	// the earlier partitions' checks consumed.
	BatchPerSlotScripts
	// DenialCacheIgnoresMode keeps the denial cache of
	// DenialCacheIgnoresCost by key and cost, but not by quota mode (which
	// is not part of the key): an enforced refusal is served to a shadow
	// check of the same counter as a denial.
	DenialCacheIgnoresMode
	// CleanupCountsRenewedInPlace counts a renewed window's earlier
	// lifetime as a removal: each cleanup call reports, beside what it
	// removed, the counters renewed in place since the last call (an
	// expired row overwritten is "deleted" in the author's audit table).
	CleanupCountsRenewedInPlace
	// MultiWithoutWatch runs every admission as a Redis MULTI/EXEC that
	// writes what it read before, without WATCH on the keys read: an
	// admission racing it between its read and its EXEC is overwritten.
	MultiWithoutWatch
	// StatsFromLaggingReplica answers Stats from a read replica one
	// commit behind the primary: the occupancy before the latest
	// admission's writes.
	StatsFromLaggingReplica
	// BatchWritesBySubject gathers a batch's new counters in a map keyed
	// by subject, and writes each key the counter of its subject's last
	// check: a subject checked under two policies in one batch gets the
	// second policy's counter under both.
	BatchWritesBySubject
	// CounterResurrectsAfterDelete keeps counts in Cassandra counter
	// columns, which cannot be set, only incremented, and whose deletion
	// does not stick: a counter cleanup deleted counts on from its old
	// value when its key is checked again.
	CounterResurrectsAfterDelete
	// ScriptRetriedOnColdCache sends the store's first admission as
	// EVALSHA, which times out while Redis loads the script, and retries
	// it with EVAL: the script ran both times, so the first admission a
	// store commits counts twice.
	ScriptRetriedOnColdCache

	faultCount
)

var faultNames = [faultCount]string{
	None: "None", RenewsEarly: "RenewsEarly", RenewsLate: "RenewsLate", InclusiveEnd: "InclusiveEnd",
	SlidesWindow: "SlidesWindow", RenewsAtOldEnd: "RenewsAtOldEnd", StoresMilliseconds: "StoresMilliseconds",
	StoresSeconds: "StoresSeconds", ClockBackwards: "ClockBackwards", FloatCounts: "FloatCounts",
	Int32Counts: "Int32Counts", FloatMicroseconds: "FloatMicroseconds", JSONRoundTrip: "JSONRoundTrip",
	ExpiredNeedsSlot: "ExpiredNeedsSlot", CachesReads: "CachesReads", CachesBatches: "CachesBatches",
	SingleCheckCache: "SingleCheckCache", ReordersAllowances: "ReordersAllowances",
	WritesInLockOrder: "WritesInLockOrder", CallerOrderLocks: "CallerOrderLocks",
	ReleasesLockBeforeWrite: "ReleasesLockBeforeWrite", ReleasesLockBeforeDeciding: "ReleasesLockBeforeDeciding",
	SingleCheckOwnLock: "SingleCheckOwnLock", NotAtomic: "NotAtomic", WritesBeforeDeciding: "WritesBeforeDeciding",
	WritesOnShadowDenial: "WritesOnShadowDenial", ConsumesOnDenial: "ConsumesOnDenial",
	IgnoresCapacity: "IgnoresCapacity", EvictsLiveKeys: "EvictsLiveKeys", OverfillsInBatch: "OverfillsInBatch",
	KeepsSlotsOfDeniedBatch: "KeepsSlotsOfDeniedBatch", BoundCountsActiveOnly: "BoundCountsActiveOnly",
	GlobalBound: "GlobalBound", CapacityRetryLatest: "CapacityRetryLatest",
	ShadowIgnoresCapacity: "ShadowIgnoresCapacity", SingleCheckIgnoresCapacity: "SingleCheckIgnoresCapacity",
	CleanupRemovesActive: "CleanupRemovesActive", CleanupIgnoresMax: "CleanupIgnoresMax",
	CleanupNegativeMeansAll: "CleanupNegativeMeansAll", CleanupNegativeUntyped: "CleanupNegativeUntyped",
	CleanupKeepsSlots:        "CleanupKeepsSlots",
	CleanupKeepsCounterAtEnd: "CleanupKeepsCounterAtEnd", StatsCountActiveOnly: "StatsCountActiveOnly",
	StatsMisindexed: "StatsMisindexed", IgnoresClose: "IgnoresClose",
	ClosedErrorMayHaveConsumed: "ClosedErrorMayHaveConsumed", ClosedErrorNamesKey: "ClosedErrorNamesKey",
	ClosedErrorUntyped:               "ClosedErrorUntyped",
	SingleCheckSkipsValidation:       "SingleCheckSkipsValidation",
	IgnoresInjectedClock:             "IgnoresInjectedClock",
	ChargesOneUnit:                   "ChargesOneUnit",
	KeysBySubjectOnly:                "KeysBySubjectOnly",
	KeysByPolicyID:                   "KeysByPolicyID",
	KeysWithoutScopePerPartition:     "KeysWithoutScopePerPartition",
	LockOrderByPolicy:                "LockOrderByPolicy",
	ReadsBeforeLocking:               "ReadsBeforeLocking",
	LocksFirstKeyOnly:                "LocksFirstKeyOnly",
	ProceedsWhenLockBusy:             "ProceedsWhenLockBusy",
	SingleCheckIgnoresCommit:         "SingleCheckIgnoresCommit",
	AnyFullPartitionRefuses:          "AnyFullPartitionRefuses",
	BatchClaimsShared:                "BatchClaimsShared",
	BatchRenewalClaimsSlot:           "BatchRenewalClaimsSlot",
	SingleCheckOrphanedRenewal:       "SingleCheckOrphanedRenewal",
	CapacityRetryFirstKeyPartition:   "CapacityRetryFirstKeyPartition",
	CleanupFreesTwice:                "CleanupFreesTwice",
	CleansActivePerCheck:             "CleansActivePerCheck",
	UnguardedCapacity:                "UnguardedCapacity",
	PerCheckCleanupKeepsSlots:        "PerCheckCleanupKeepsSlots",
	CleanupMaxPerPartition:           "CleanupMaxPerPartition",
	PanicsWhenClosed:                 "PanicsWhenClosed",
	RenewalTakesSlot:                 "RenewalTakesSlot",
	CleanupContextBeforeZero:         "CleanupContextBeforeZero",
	CleanupIgnoresContext:            "CleanupIgnoresContext",
	CleanupContextBeforeNegative:     "CleanupContextBeforeNegative",
	CleanupZeroSkipsClosed:           "CleanupZeroSkipsClosed",
	PanicsOnNilContext:               "PanicsOnNilContext",
	NilContextUntyped:                "NilContextUntyped",
	ClockReadBeforeLocks:             "ClockReadBeforeLocks",
	PartitionLocksInKeyOrder:         "PartitionLocksInKeyOrder",
	ShadowSkipsLocks:                 "ShadowSkipsLocks",
	StripeLockedTwice:                "StripeLockedTwice",
	CapacityRetryAnyPartition:        "CapacityRetryAnyPartition",
	CapacityRetryFirstWindow:         "CapacityRetryFirstWindow",
	StatsPanicsOnNilContext:          "StatsPanicsOnNilContext",
	IgnoresDoneContext:               "IgnoresDoneContext",
	DoneContextRawError:              "DoneContextRawError",
	DoneContextErrorNamesKey:         "DoneContextErrorNamesKey",
	DoneContextErrorKeyField:         "DoneContextErrorKeyField",
	ClosedBeforeNilContext:           "ClosedBeforeNilContext",
	ClosedBeforeCheckValidation:      "ClosedBeforeCheckValidation",
	DoneContextBeforeClosed:          "DoneContextBeforeClosed",
	LateCancelUnconsumed:             "LateCancelUnconsumed",
	SkipsBatchReady:                  "SkipsBatchReady",
	CleanupLocksPartitionsDescending: "CleanupLocksPartitionsDescending",
	ClosedBeforeBatchReady:           "ClosedBeforeBatchReady",
	EpochAlignedWindows:              "EpochAlignedWindows",
	SingleCheckReusesLastTime:        "SingleCheckReusesLastTime",
	TrustsInjectedClock:              "TrustsInjectedClock",
	CleanupKeepsReadCache:            "CleanupKeepsReadCache",
	ReclaimTakesBatchKeySlot:         "ReclaimTakesBatchKeySlot",
	CleanupSweepsCurrentMillisecond:  "CleanupSweepsCurrentMillisecond",
	WindowInt32Millis:                "WindowInt32Millis",
	StoresUnixNanos:                  "StoresUnixNanos",
	ShadowSeparateCounter:            "ShadowSeparateCounter",
	BatchReadsBySubject:              "BatchReadsBySubject",
	RenewalKeepsCount:                "RenewalKeepsCount",
	LocksBySubject:                   "LocksBySubject",
	CleanupDeletesWithoutRecheck:     "CleanupDeletesWithoutRecheck",
	CleanupDropsKeyLock:              "CleanupDropsKeyLock",
	CleanupHoldsClockLock:            "CleanupHoldsClockLock",
	CleanupStaleExpiryIndex:          "CleanupStaleExpiryIndex",
	StatsEntriesNeverShrink:          "StatsEntriesNeverShrink",
	OptimisticCountOnly:              "OptimisticCountOnly",
	OptimisticVersionRestarts:        "OptimisticVersionRestarts",
	DoneContextErrorKeyBase32:        "DoneContextErrorKeyBase32",
	DoneContextErrorKeyQuoted:        "DoneContextErrorKeyQuoted",
	DoneContextErrorKeySpacedHex:     "DoneContextErrorKeySpacedHex",
	DoneContextErrorLockID:           "DoneContextErrorLockID",
	DoneContextErrorKeyString:        "DoneContextErrorKeyString",
	DoneContextErrorKeyShortID:       "DoneContextErrorKeyShortID",
	CleanupNilContextBeforeNegative:  "CleanupNilContextBeforeNegative",
	CleanupTypedNilError:             "CleanupTypedNilError",
	CancelBetweenWrites:              "CancelBetweenWrites",
	CancelKeepsClaimedSlots:          "CancelKeepsClaimedSlots",
	NilContextBeforeBatchReady:       "NilContextBeforeBatchReady",
	ReadyAfterClose:                  "ReadyAfterClose",
	ReadyAdmitsProbe:                 "ReadyAdmitsProbe",
	SingleCheckSharedReads:           "SingleCheckSharedReads",
	ClockReadAfterFirstLock:          "ClockReadAfterFirstLock",
	CreatesAfterRelock:               "CreatesAfterRelock",
	TTLSetOnCreateOnly:               "TTLSetOnCreateOnly",
	ReadsTTLInWholeMillis:            "ReadsTTLInWholeMillis",
	ExpiresAtWholeMillis:             "ExpiresAtWholeMillis",
	BatchTTLFromFirstCheck:           "BatchTTLFromFirstCheck",
	CapacityRetryRefreshedTTL:        "CapacityRetryRefreshedTTL",
	CapacityRetryWholeSeconds:        "CapacityRetryWholeSeconds",
	CapacityRetrySamePolicy:          "CapacityRetrySamePolicy",
	ClampsOnlyOnCommit:               "ClampsOnlyOnCommit",
	ClampKeepsRawTime:                "ClampKeepsRawTime",
	ClampsFirstPartitionOnly:         "ClampsFirstPartitionOnly",
	SingleCheckOwnClamp:              "SingleCheckOwnClamp",
	BatchCappedAtCapacity:            "BatchCappedAtCapacity",
	DoneContextErrorKeyBytea:         "DoneContextErrorKeyBytea",
	CleanupFreesSlotOfRenewed:        "CleanupFreesSlotOfRenewed",

	CapacityRetryOwnWindow:          "CapacityRetryOwnWindow",
	CapacityRetryKeptFromLastDenial: "CapacityRetryKeptFromLastDenial",
	CapacityRoundedToPowerOfTwo:     "CapacityRoundedToPowerOfTwo",
	StatsReusesHeadroom:             "StatsReusesHeadroom",
	StatsCachesReport:               "StatsCachesReport",
	CloseReleasesCounters:           "CloseReleasesCounters",
	ClosedErrorIsInvalidInput:       "ClosedErrorIsInvalidInput",
	DoneContextCause:                "DoneContextCause",
	CleanupLowersClamp:              "CleanupLowersClamp",
	KeysByHash64:                    "KeysByHash64",
	KeysBySubjectSuffix:             "KeysBySubjectSuffix",
	KeysXorFolded:                   "KeysXorFolded",
	KeysByFingerprintXorSubject:     "KeysByFingerprintXorSubject",
	KeysByFingerprintFirstByte:      "KeysByFingerprintFirstByte",
	NewKeyBySubjectSeen:             "NewKeyBySubjectSeen",
	NewKeyByHash64Seen:              "NewKeyByHash64Seen",
	TombstonesFillTable:             "TombstonesFillTable",
	ProbeStopsAtDeletedCell:         "ProbeStopsAtDeletedCell",
	SlotFreedTwiceWhenEmpty:         "SlotFreedTwiceWhenEmpty",
	AllocatorRestartsWhenEmpty:      "AllocatorRestartsWhenEmpty",
	CleanupFiltersHeapInPlace:       "CleanupFiltersHeapInPlace",
	KeysByInt32Limit:                "KeysByInt32Limit",
	KeysByFloatLimit:                "KeysByFloatLimit",
	KeysByInt32WindowMillis:         "KeysByInt32WindowMillis",
	KeysByJoinedText:                "KeysByJoinedText",
	KeysByUnseparatedFields:         "KeysByUnseparatedFields",
	KeysByFingerprintPrefix:         "KeysByFingerprintPrefix",
	KeysByFingerprintSuffix:         "KeysByFingerprintSuffix",
	NewKeysClaimBySubject:           "NewKeysClaimBySubject",
	NewKeysClaimByPolicy:            "NewKeysClaimByPolicy",
	CleanupRemovesSubject:           "CleanupRemovesSubject",

	SingleCheckDecisionBesideError:     "SingleCheckDecisionBesideError",
	LateCancelDecisionBesideError:      "LateCancelDecisionBesideError",
	StatsBesideClosedError:             "StatsBesideClosedError",
	SingleCheckErrorUntyped:            "SingleCheckErrorUntyped",
	NilContextBeforeCheckValidation:    "NilContextBeforeCheckValidation",
	DoneContextBeforeCheckValidation:   "DoneContextBeforeCheckValidation",
	DoneContextBeforeBatchReady:        "DoneContextBeforeBatchReady",
	DoneContextErrorMatchesClosed:      "DoneContextErrorMatchesClosed",
	DoneContextErrorKeyLittleEndianHex: "DoneContextErrorKeyLittleEndianHex",
	DoneContextErrorKeyDecimal:         "DoneContextErrorKeyDecimal",
	DoneContextErrorKeyWords:           "DoneContextErrorKeyWords",

	ClampToleratesJitter:         "ClampToleratesJitter",
	ClampComparesMilliseconds:    "ClampComparesMilliseconds",
	CapacityRetryCappedAtDay:     "CapacityRetryCappedAtDay",
	CapacityRetryFloatUnixMicros: "CapacityRetryFloatUnixMicros",
	FloatUnixMicroseconds:        "FloatUnixMicroseconds",
	DeadlineFloatUnixSeconds:     "DeadlineFloatUnixSeconds",

	FreeSlotsCountedBeforeKeyLocks: "FreeSlotsCountedBeforeKeyLocks",
	CleanupGathersByPartition:      "CleanupGathersByPartition",
	CleanupGatherFreesAnyway:       "CleanupGatherFreesAnyway",

	CapacityRetryActiveOnly:        "CapacityRetryActiveOnly",
	BatchRenewalClaimsSlotPerCheck: "BatchRenewalClaimsSlotPerCheck",

	StatsEntriesActiveAtLastAdmission: "StatsEntriesActiveAtLastAdmission",

	StampsWithSecondClockRead: "StampsWithSecondClockRead",

	StatsCachedAfterClose:       "StatsCachedAfterClose",
	StatsBesideContextError:     "StatsBesideContextError",
	StatsClosedBeforeNilContext: "StatsClosedBeforeNilContext",
	StatsContextBeforeClosed:    "StatsContextBeforeClosed",
	StatsCountRefusedAdmission:  "StatsCountRefusedAdmission",
	CleanupCutShortReportsNone:  "CleanupCutShortReportsNone",
	ReadyNilContextNil:          "ReadyNilContextNil",
	ReadyIgnoresDoneContext:     "ReadyIgnoresDoneContext",
	ReadyStickyAfterCancel:      "ReadyStickyAfterCancel",
	ReadyContextBeforeClosed:    "ReadyContextBeforeClosed",

	SweepSparesWindowEndingNow: "SweepSparesWindowEndingNow",
	SweepsFirstCheckOnly:       "SweepsFirstCheckOnly",

	CleanupMaxNarrowedToInt32:  "CleanupMaxNarrowedToInt32",
	CapacityRetrySamplesNewest: "CapacityRetrySamplesNewest",
	CleanupReadsUnclampedClock: "CleanupReadsUnclampedClock",
	NewKeysJudgedBeforeLocks:   "NewKeysJudgedBeforeLocks",

	NewKeysJudgedBeforePartitionLocks: "NewKeysJudgedBeforePartitionLocks",
	CleanupChunksWithoutRecheck:       "CleanupChunksWithoutRecheck",
	KeysDropControlBytes:              "KeysDropControlBytes",
	KeysFoldBase64Case:                "KeysFoldBase64Case",
	ClockJoinsSecondsAndMicros:        "ClockJoinsSecondsAndMicros",
	CleanupSkipsAfterRemoval:          "CleanupSkipsAfterRemoval",
	BatchStepsPerKeyWithRefund:        "BatchStepsPerKeyWithRefund",

	LockOrderBySubjectKey:   "LockOrderBySubjectKey",
	ClampedClockBeforeLocks: "ClampedClockBeforeLocks",

	ClampRacyReadModifyWrite:       "ClampRacyReadModifyWrite",
	CancelledCheckGoesOn:           "CancelledCheckGoesOn",
	CancelledWaitKeepsEarlierLocks: "CancelledWaitKeepsEarlierLocks",
	CancelledWaitDropsLockEntry:    "CancelledWaitDropsLockEntry",
	CancelledWaitKeepsLocks:        "CancelledWaitKeepsLocks",
	CancelledWaitAnswersNothing:    "CancelledWaitAnswersNothing",
	CancelledWaitOwnError:          "CancelledWaitOwnError",

	WritesThroughInversePermutation: "WritesThroughInversePermutation",
	CleanupTakesLastMicrosecond:     "CleanupTakesLastMicrosecond",
	PerCheckTakesLastMicrosecond:    "PerCheckTakesLastMicrosecond",
	CleanupLeavesClampBelow:         "CleanupLeavesClampBelow",
	SortsOnlyPairs:                  "SortsOnlyPairs",
	StatsLocksPartitionsDescending:  "StatsLocksPartitionsDescending",

	BatchRenewalSlides:    "BatchRenewalSlides",
	ClockMutexBeforeLocks: "ClockMutexBeforeLocks",

	AnswersAtLaterClockRead:     "AnswersAtLaterClockRead",
	AnswersAtFirstAttempt:       "AnswersAtFirstAttempt",
	CapacityRetrySkipsBatchKeys: "CapacityRetrySkipsBatchKeys",

	ReplicaCountsOwnSlots:  "ReplicaCountsOwnSlots",
	ReplicaLocksInProcess:  "ReplicaLocksInProcess",
	ReplicaCachesOwnWrites: "ReplicaCachesOwnWrites",
	ReplicaClampsOwnClock:  "ReplicaClampsOwnClock",
	ReplicaCleansOwnKeys:   "ReplicaCleansOwnKeys",

	WindowSecondsTruncated:             "WindowSecondsTruncated",
	TimesFloatSecondsTruncated:         "TimesFloatSecondsTruncated",
	WindowEndRoundedUpToMillis:         "WindowEndRoundedUpToMillis",
	CapacityRetryTruncatedToMillis:     "CapacityRetryTruncatedToMillis",
	OptimisticRetryKeepsOccupancy:      "OptimisticRetryKeepsOccupancy",
	OptimisticRetryDecidesOnFirstRead:  "OptimisticRetryDecidesOnFirstRead",
	OptimisticComparesWindowOnly:       "OptimisticComparesWindowOnly",
	WriteBehindStats:                   "WriteBehindStats",
	WriteBehindCleanup:                 "WriteBehindCleanup",
	CapacityPerProcess:                 "CapacityPerProcess",
	KeysCutAtNulByte:                   "KeysCutAtNulByte",
	KeysCutTo50Bytes:                   "KeysCutTo50Bytes",
	KeysFoldRawCase:                    "KeysFoldRawCase",
	StatsCachedPerInstant:              "StatsCachedPerInstant",
	LateCancelDropsWriteAnswersAllowed: "LateCancelDropsWriteAnswersAllowed",
	CleanupCountsSkipped:               "CleanupCountsSkipped",
	CleanupStopsAtLockedKey:            "CleanupStopsAtLockedKey",
	SingleCheckStoresMillis:            "SingleCheckStoresMillis",
	WriteBehindBatches:                 "WriteBehindBatches",
	AnchorsAtLastSeenTime:              "AnchorsAtLastSeenTime",
	StatsHeadroomSpread:                "StatsHeadroomSpread",
	KeysAsJSONStrings:                  "KeysAsJSONStrings",

	RetryKeepsFirstClock:          "RetryKeepsFirstClock",
	KeysByWindowSeconds:           "KeysByWindowSeconds",
	KeysWithoutLimit:              "KeysWithoutLimit",
	KeysWithoutWindow:             "KeysWithoutWindow",
	DoneContextDeadlineOnly:       "DoneContextDeadlineOnly",
	DoneContextCanceledOnly:       "DoneContextCanceledOnly",
	SingleCheckIgnoresClose:       "SingleCheckIgnoresClose",
	SingleCheckIgnoresDoneContext: "SingleCheckIgnoresDoneContext",
	StatsCapacityPerPartition:     "StatsCapacityPerPartition",
	StatsHeadroomSortedByFill:     "StatsHeadroomSortedByFill",
	StatsHeadroomExcludesExpired:  "StatsHeadroomExcludesExpired",
	StatsShardsNonEmpty:           "StatsShardsNonEmpty",
	SharedObservationBuffer:       "SharedObservationBuffer",
	DenialRollsBackOwnShardOnly:   "DenialRollsBackOwnShardOnly",
	ClockRefreshedEveryFourth:     "ClockRefreshedEveryFourth",
	CleanupSkipsLastPartition:     "CleanupSkipsLastPartition",
	ConflictRetryReappliesWrite:   "ConflictRetryReappliesWrite",
	CapacityClaimsInKeyOrder:      "CapacityClaimsInKeyOrder",

	CleanupStopsAtFirstActive:      "CleanupStopsAtFirstActive",
	CleanupCutoffTakesTies:         "CleanupCutoffTakesTies",
	CleanupOffByOneMax:             "CleanupOffByOneMax",
	CleanupAtWholeMilliseconds:     "CleanupAtWholeMilliseconds",
	RenewalChargesOneUnit:          "RenewalChargesOneUnit",
	BatchNewKeysChargeOneUnit:      "BatchNewKeysChargeOneUnit",
	RenewalInsertIgnoresConflict:   "RenewalInsertIgnoresConflict",
	StartRoundedUpToMillis:         "StartRoundedUpToMillis",
	RenewalKeepsStart:              "RenewalKeepsStart",
	KeysByPrintedSubject:           "KeysByPrintedSubject",
	ConfigColumnsResetOnChange:     "ConfigColumnsResetOnChange",
	ModeSwitchResetsCounter:        "ModeSwitchResetsCounter",
	ShadowDeniedKeepsClaimedSlots:  "ShadowDeniedKeepsClaimedSlots",
	ShadowKeysTakeNoSlot:           "ShadowKeysTakeNoSlot",
	PartitionByFingerprintOnly:     "PartitionByFingerprintOnly",
	ExpiredResetBeforeDeciding:     "ExpiredResetBeforeDeciding",
	KeysFoldIdentifierCase:         "KeysFoldIdentifierCase",
	KeysSanitizeIdentifiers:        "KeysSanitizeIdentifiers",
	KeysCleanScopePath:             "KeysCleanScopePath",
	CapacityPerPolicy:              "CapacityPerPolicy",
	BatchInclusiveEnd:              "BatchInclusiveEnd",
	LongWindowTTLReadAsAbsolute:    "LongWindowTTLReadAsAbsolute",
	TTLWholeSecondsDropsEarly:      "TTLWholeSecondsDropsEarly",
	ActiveUntilTTLSecond:           "ActiveUntilTTLSecond",
	CleanupByTTLSeconds:            "CleanupByTTLSeconds",
	CleanupCappedAt25PerCall:       "CleanupCappedAt25PerCall",
	CreateWithoutAbsentCondition:   "CreateWithoutAbsentCondition",
	IncrementNarrowedToInt32:       "IncrementNarrowedToInt32",
	StartTruncatedToSeconds:        "StartTruncatedToSeconds",
	StatsEntriesDistinctSubjects:   "StatsEntriesDistinctSubjects",
	CapacityCountsDistinctSubjects: "CapacityCountsDistinctSubjects",
	DoneContextMayHaveConsumed:     "DoneContextMayHaveConsumed",
	TransactionSplitAt25:           "TransactionSplitAt25",
	WriteBackLRUDropsEvicted:       "WriteBackLRUDropsEvicted",
	ActiveUntilLeaseMinTTL:         "ActiveUntilLeaseMinTTL",
	BatchWriteDropsUnprocessed:     "BatchWriteDropsUnprocessed",
	DenialCacheIgnoresCost:         "DenialCacheIgnoresCost",
	DenialCachedForRetrySeconds:    "DenialCachedForRetrySeconds",
	CleanupReturnsExamined:         "CleanupReturnsExamined",
	StatsCountsUpsertRowsAffected:  "StatsCountsUpsertRowsAffected",
	SubjectHashSharedTTL:           "SubjectHashSharedTTL",
	ExpireGivenMilliseconds:        "ExpireGivenMilliseconds",
	BatchPerSlotScripts:            "BatchPerSlotScripts",
	DenialCacheIgnoresMode:         "DenialCacheIgnoresMode",
	CleanupCountsRenewedInPlace:    "CleanupCountsRenewedInPlace",
	MultiWithoutWatch:              "MultiWithoutWatch",
	StatsFromLaggingReplica:        "StatsFromLaggingReplica",
	BatchWritesBySubject:           "BatchWritesBySubject",
	CounterResurrectsAfterDelete:   "CounterResurrectsAfterDelete",
	ScriptRetriedOnColdCache:       "ScriptRetriedOnColdCache",
}

// Faults returns every deliberate defect, None excluded.
func Faults() []Fault {
	fs := make([]Fault, 0, faultCount-1)
	for f := None + 1; f < faultCount; f++ {
		fs = append(fs, f)
	}
	return fs
}

// String returns the fault's name, as used to select it in a child test
// process.
func (f Fault) String() string {
	if f < faultCount {
		return faultNames[f]
	}
	return "unknown"
}

// ParseFault returns the fault named s.
func ParseFault(s string) (Fault, bool) {
	for f := None; f < faultCount; f++ {
		if faultNames[f] == s {
			return f, true
		}
	}
	return None, false
}
