package httplimit

import "time"

// Internals the external tests drive directly.
var (
	AppendSFString    = appendSFString
	AppendSFInteger   = appendSFInteger
	SortQuotas        = sortQuotas
	RetryAfterSeconds = retryAfterSeconds
	FoldRune          = foldRune
)

// CeilSeconds is ceilSeconds.
func CeilSeconds(d time.Duration) int64 { return ceilSeconds(d) }
