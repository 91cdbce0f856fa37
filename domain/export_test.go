package domain

import "time"

// QuotaDenialAfter builds a quota denial with an exact retry time. Window
// arithmetic yields whole microseconds only; this reaches the nanosecond
// edges of rounding.
func QuotaDenialAfter(d time.Duration) Denial {
	return Denial{reason: QuotaExhausted, retryAfter: d, hasRetry: true}
}
