package mapstore

// AdmitError reports a batch the store could not apply, such as a stored
// counter that breaks the window rules. Nothing was written.
type AdmitError struct {
	Err error
}

func (e *AdmitError) Error() string { return "mapstore: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *AdmitError) Unwrap() error { return e.Err }

// MayHaveConsumedQuota returns false: the store writes only after a
// successful evaluation, under the same lock, so a failed admission wrote
// nothing. [ports.MayHaveConsumedQuota] reads it.
func (e *AdmitError) MayHaveConsumedQuota() bool { return false }
