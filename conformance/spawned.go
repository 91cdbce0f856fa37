package conformance

import (
	"bytes"
	"runtime"
	"strconv"
)

// creatorID returns the id of the goroutine that started the calling one,
// read from the "created by ... in goroutine N" line that ends its stack,
// or 0 when the stack does not say (or does not fit the buffer).
//
// A store may run an admission on a goroutine of its own (a worker pool,
// or a call it answers when the caller's context ends while the work goes
// on): the clock read of that goroutine is then the member's that started
// it, held and pinned as the member's own would be, so that the races the
// suite forces still happen (see readIfRacing).
func creatorID() int64 {
	var buf [8 << 10]byte
	n := runtime.Stack(buf[:], false)
	if n == len(buf) {
		return 0
	}
	i := bytes.LastIndex(buf[:n], []byte("created by "))
	if i < 0 {
		return 0
	}
	line, _, _ := bytes.Cut(buf[i:n], []byte("\n"))
	j := bytes.LastIndex(line, []byte(" in goroutine "))
	if j < 0 {
		return 0
	}
	id, err := strconv.ParseInt(string(line[j+len(" in goroutine "):]), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
