package casstore

// AdmitError reports an admission the store could not apply: a cancelled
// context, or a stored counter that breaks the window rules. Nothing was
// written.
type AdmitError struct {
	Err error
}

func (e *AdmitError) Error() string { return "casstore: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *AdmitError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: the store's only write is the atomic
// conditional write of a successful attempt, so a failed admission wrote
// nothing. [ports.MayHaveConsumedQuota] reads it.
func (e *AdmitError) MayHaveConsumedQuota() bool { return false }
