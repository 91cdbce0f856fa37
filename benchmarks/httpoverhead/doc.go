// Package httpoverhead measures what a rate-limiting middleware costs a
// request: an empty handler alone, behind Runlimit's httplimit middleware
// on the memory store, and behind go-limiter's httplimit middleware on its
// memory store, in one benchmark run. See ../README.md.
package httpoverhead
