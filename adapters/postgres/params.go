package postgres

import (
	"encoding/binary"
	"time"

	"github.com/runlimit/runlimit/domain"
)

// params is a list of statement parameters in PostgreSQL's binary format,
// kept in one buffer that an admission reuses: each parameter is appended
// to buf and closed with end.
type params struct {
	buf  []byte
	ends []int
	list [][]byte
}

// reset starts a new list.
func (p *params) reset() { p.buf, p.ends = p.buf[:0], p.ends[:0] }

// end closes the parameter appended since the previous one.
func (p *params) end() { p.ends = append(p.ends, len(p.buf)) }

// slice returns the parameters added since reset, as views into buf.
func (p *params) slice() [][]byte {
	p.list = p.list[:0]
	start := 0
	for _, end := range p.ends {
		p.list = append(p.list, p.buf[start:end:end])
		start = end
	}
	return p.list
}

// addTimeouts adds the two timeout settings every transaction of the store
// starts with, in the form set_config reads: the statement and lock timeout,
// which ends by wait (the caller's deadline or the budget's, whichever is
// first), then the idle-in-transaction timeout, which ends by budget, so
// that a caller in a hurry never gets the server to end the session. They
// are built nowhere else.
func (p *params) addTimeouts(wait, budget time.Time) {
	p.buf = appendServerTimeout(p.buf, wait)
	p.end()
	p.buf = appendServerTimeout(p.buf, budget)
	p.end()
}

// addLockTimeout adds the lock timeout alone, which ends by wait: for the
// optimistic protocol's writes, one statement each, which set it
// themselves before they wait for anything.
func (p *params) addLockTimeout(wait time.Time) {
	p.buf = appendServerTimeout(p.buf, wait)
	p.end()
}

// Each add method below adds v as one parameter: an array, or v's only
// element when scalar is set, for the scalar statements a batch of one
// takes.

func (p *params) addBytea(v [][]byte, scalar bool) {
	if scalar {
		p.buf = append(p.buf, v[0]...)
	} else {
		p.buf = appendByteaArray(p.buf, v)
	}
	p.end()
}

func (p *params) addText(v []string, scalar bool) {
	if scalar {
		p.buf = append(p.buf, v[0]...)
	} else {
		p.buf = appendTextArray(p.buf, v)
	}
	p.end()
}

func (p *params) addInt8(v []int64, scalar bool) {
	if scalar {
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(v[0]))
	} else {
		p.buf = appendInt8Array(p.buf, v)
	}
	p.end()
}

func (p *params) addInt2(v []int16, scalar bool) {
	if scalar {
		p.buf = binary.BigEndian.AppendUint16(p.buf, uint16(v[0]))
	} else {
		p.buf = appendInt2Array(p.buf, v)
	}
	p.end()
}

func (p *params) addTime(v []domain.Instant, scalar bool) {
	if scalar {
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(int64(v[0])-postgresEpoch))
	} else {
		p.buf = appendTimeArray(p.buf, v)
	}
	p.end()
}
