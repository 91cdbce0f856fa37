package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/domain"
)

// connState is what a store keeps on a pooled connection, in its PgConn's
// CustomData under the store's statements.stateKey: the statements it
// prepared there. A connection without one is cold.
type connState struct {
	stmts [stmtCount]*pgconn.StatementDescription
}

// stateOf returns the store's state on pc, or nil when pc is cold.
func (s *Store) stateOf(pc *pgconn.PgConn) *connState {
	st, _ := pc.CustomData()[s.sql.stateKey].(*connState)
	return st
}

// warmLockID is the advisory lock the warm-up takes, briefly: the lock of
// the all-zero counter key, which no real counter has.
var warmLockID = AdvisoryLockID(domain.CounterKey{})

// warmQueries is how many statements warm runs besides its preparations:
// BEGIN, the settings, their guard, the table locks, the five warming
// queries and ROLLBACK.
const warmQueries = 10

// warmSettings is the index of sqlSettings' result among warm's results,
// which follows BEGIN's.
const warmSettings = 1

// warm makes a cold connection ready in one round trip: it prepares every
// statement and runs round trip 1 of a single check and of a batch, and the
// read of the optimistic protocol, whose first runs are planned, in a
// transaction it rolls back.
// The warm-up reads name shard -1, which has no ledger row, and a key
// without a counter, so they lock no row; its advisory lock is the zero
// key's.
//
// Before it prepares anything, the transaction sets its own statement
// timeout, from budget, and lock timeout, from wait (the caller's deadline,
// or the budget if that ends first), overriding whatever the role or the
// database set, reads the settings the store cannot set for itself (see
// checkSettings), fails at once when the server can tell they are unsafe
// (sqlSettingsGuard: nothing is then prepared or run under them), and
// takes its tables' ACCESS SHARE locks, which every
// preparation naming a table takes too. A table that another session holds
// locked (an ALTER TABLE, a LOCK TABLE) therefore holds the warm-up no
// longer than it would hold an admission on a warm connection, and the
// server's lock timeout, not the end of the budget, ends the wait: the
// connection, which has prepared nothing, stays in the pool, cold.
//
// When some statements were prepared before one failed, or the settings
// are unsafe, the connection holds statements its state does not record,
// and cannot be warmed again until unprepare takes them back; lost reports
// that it could not.
func (s *Store) warm(ctx context.Context, pc *pgconn.PgConn, wait, budget time.Time) (st *connState, lost bool, err error) {
	var zero [32]byte
	var lockID [8]byte
	binary.BigEndian.PutUint64(lockID[:], uint64(warmLockID))
	shard := []byte{0xff, 0xff} // -1
	var timeouts params
	timeouts.addTimeouts(budget, budget)
	timeouts.addLockTimeout(wait)
	t := timeouts.slice() // statements, idle gaps (budget); lock waits (wait)
	emptyBytea := appendEmptyArray(nil, oidBytea)
	emptyInt8 := appendEmptyArray(nil, oidInt8)
	emptyInt2 := appendEmptyArray(nil, oidInt2)

	p := pc.StartPipeline(ctx)
	// BEGIN comes first, before anything takes a snapshot: the
	// preparations look up the catalog, and a transaction whose isolation
	// level is set once it has a snapshot is refused, which, under a
	// stricter default_transaction_isolation than read committed, would
	// fail every warm-up. Statements prepared in a transaction outlive its
	// rollback.
	p.SendQueryParams(sqlBegin, nil, nil, nil, nil)
	p.SendQueryParams(sqlSettings, [][]byte{t[0], t[2], t[1]}, nil, nil, binaryFormat)
	// Unsafe settings end the round trip here, before anything is
	// prepared or run under them.
	p.SendQueryParams(sqlSettingsGuard, nil, nil, nil, nil)
	p.SendQueryParams(s.sql.warmLock, nil, nil, nil, nil)
	for _, st := range s.sql.prepared {
		p.SendPrepare(st.name, st.sql, nil)
	}
	names := &s.sql.prepared
	p.SendQueryPrepared(names[stmtLockOne].name, [][]byte{t[0], t[1], lockID[:]}, binaryFormat, nil)
	p.SendQueryPrepared(names[stmtReadOne].name, [][]byte{zero[:], zero[:], shard}, binaryFormat, binaryFormat)
	p.SendQueryPrepared(names[stmtLockMany].name, [][]byte{t[0], t[1], emptyInt8}, binaryFormat, binaryFormat)
	p.SendQueryPrepared(names[stmtReadMany].name, [][]byte{emptyBytea, emptyBytea, emptyInt2}, binaryFormat, binaryFormat)
	p.SendQueryPrepared(names[stmtOptRead].name, [][]byte{zero[:], zero[:], shard}, binaryFormat, binaryFormat)
	p.SendQueryParams(sqlRollback, nil, nil, nil, nil)
	if err := p.Sync(); err != nil {
		_ = p.Close()
		return nil, true, err
	}

	st = new(connState)
	prepared, queries := 0, 0
	var firstErr error
	unsafe := malformed("warming a connection read no settings")
	for {
		res, err := p.GetResults()
		if err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				// The connection is broken; Close says so too. A server
				// that ends the session (a terminated backend, a
				// shutdown) says why first: that is the cause to report,
				// not the closed connection it leaves.
				_ = p.Close()
				if firstErr != nil {
					err = firstErr
				}
				return nil, true, err
			}
			// The server skips the rest until the Sync.
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		switch r := res.(type) {
		case *pgconn.StatementDescription:
			// A pipeline's description does not carry its statement's name.
			r.Name, r.SQL = s.sql.prepared[prepared].name, s.sql.prepared[prepared].sql
			st.stmts[prepared] = r
			prepared++
		case *pgconn.ResultReader:
			if queries == warmSettings {
				for r.NextRow() {
					unsafe = checkSettingValues(r.Values())
				}
			}
			if _, err := r.Close(); err != nil && firstErr == nil {
				firstErr = err
			}
			queries++
		case *pgconn.PipelineSync:
			if err := p.Close(); err != nil && firstErr == nil {
				firstErr = err
			}
			// Unsafe settings are the cause of the guard's error.
			var setting *SettingError
			if firstErr == nil || errors.As(unsafe, &setting) {
				firstErr = unsafe
			}
			if firstErr != nil {
				return nil, prepared > 0 && !s.unprepare(ctx, pc, prepared), firstErr
			}
			if prepared != stmtCount || queries != warmQueries {
				return nil, true, fmt.Errorf("runlimit: warming a connection got %d of %d statements and %d of %d results",
					prepared, stmtCount, queries, warmQueries)
			}
			return st, false, nil
		case nil:
			_ = p.Close()
			if firstErr != nil {
				return nil, true, firstErr
			}
			return nil, true, errIncomplete
		}
	}
}

// unprepare takes back the first n of the statements a failed warm-up
// prepared on pc, rolling back its transaction first, in one round trip, so
// that the connection is cold again and stays in the pool: a setting or a
// privilege that fails every warm-up (a read-only default, an unsafe
// setting, a missing function) then costs each caller a round trip, not a
// new connection. It reports false when that failed, and pc's state is
// unknown.
func (s *Store) unprepare(ctx context.Context, pc *pgconn.PgConn, n int) bool {
	if pc.IsClosed() || pc.IsBusy() {
		return false
	}
	p := pc.StartPipeline(ctx)
	if pc.TxStatus() != 'I' {
		p.SendQueryParams(sqlRollback, nil, nil, nil, nil)
	}
	for _, st := range s.sql.prepared[:n] {
		p.SendDeallocate(st.name)
	}
	if err := p.Sync(); err != nil {
		_ = p.Close()
		return false
	}
	for {
		res, err := p.GetResults()
		if err != nil {
			_ = p.Close()
			return false
		}
		switch r := res.(type) {
		case *pgconn.ResultReader:
			if _, err := r.Close(); err != nil {
				_ = p.Close()
				return false
			}
		case *pgconn.PipelineSync:
			return p.Close() == nil && pc.TxStatus() == 'I'
		case nil:
			_ = p.Close()
			return false
		}
	}
}

// ready makes the session's connection ready for an admission, warming it
// under a budget of its own when it is cold; the operation's budget starts
// afterwards. It returns nil and the error to report when the connection
// could not be made ready, and nil and nil when the caller left meanwhile.
func (s *Store) ready(ss *session, caller context.Context) (*connState, error) {
	if st := s.stateOf(ss.pc); st != nil {
		return st, nil
	}
	ss.warming()
	st, lost, err := s.warm(ss.ctx, ss.pc, ss.wait, ss.budget)
	stay := ss.warmed(err == nil)
	if err != nil {
		if lost {
			ss.setLost()
		}
		return nil, interpretError(OpAcquire, stageOpen, err)
	}
	ss.pc.CustomData()[s.sql.stateKey] = st
	// Connections opened in the same burst are likely cold too.
	s.startWarmIdle(false)
	if !stay {
		return nil, nil
	}
	ss.setBudget(caller, s.cfg.OperationTimeout)
	return st, nil
}

// startWarmIdle starts warmIdle on a goroutine that Close waits for,
// unless one runs already or the store is closing.
func (s *Store) startWarmIdle(wait bool) {
	state := s.state()
	if state.warmingIdle.Load() || !state.bg.add(true) {
		return
	}
	go s.warmIdle(wait)
}

// warmIdle makes the pool's idle connections ready, in the background, once
// at a time. A connection the pool opened for a caller who gave up waiting
// joins the pool cold, and would cost the next caller its warm-up; wait
// first waits (within AcquireTimeout) for a connection, which is most
// likely that one as it arrives. Close ends that wait, and the connections
// not yet warmed go back to the pool cold.
//
// A panic of the host's code that the pool runs here (its acquire or
// release tracer, a PrepareConn hook) ends the warm-up, as one on a
// connection being warmed does (see warmIdleConn): no caller waits for
// it, and on this goroutine it would end the host's process. The
// connections it still holds go back to the pool.
func (s *Store) warmIdle(wait bool) {
	state := s.state()
	defer state.bg.done()
	if !state.warmingIdle.CompareAndSwap(false, true) {
		return
	}
	defer state.warmingIdle.Store(false)
	var conns []*pgxpool.Conn
	defer func() {
		if v := recover(); v != nil {
			// Release does nothing for a connection already given back
			// or closed.
			for _, conn := range conns {
				releaseAfterPanic(conn)
			}
		}
	}()
	if wait {
		ctx, cancel := context.WithTimeout(state.bg.ctx, s.cfg.AcquireTimeout)
		conn, err := s.conns().Acquire(ctx)
		cancel()
		if err == nil {
			conns = append(conns, conn)
		}
	}
	conns = append(conns, s.conns().AcquireAllIdle(state.bg.ctx)...)
	var cold []*pgxpool.Conn
	for _, conn := range conns {
		if s.stateOf(conn.Conn().PgConn()) == nil {
			cold = append(cold, conn)
			continue
		}
		conn.Release()
	}
	for _, conn := range cold {
		if state.bg.stopping() {
			conn.Release()
			continue
		}
		s.warmIdleConn(conn)
	}
}

// releaseAfterPanic gives conn back to the pool, a panic of the host's
// code as it goes (the pool's release tracer) ending here.
func releaseAfterPanic(conn *pgxpool.Conn) {
	defer func() { _ = recover() }()
	conn.Release()
}

// warmIdleConn warms conn, an idle connection warmIdle holds, and gives it
// back, or closes it when the warm-up failed. A panic of the host's code
// on the connection (see session.run) closes it too, and ends there: no
// caller waits for this warm-up, and on this goroutine it would end the
// host's process.
func (s *Store) warmIdleConn(conn *pgxpool.Conn) {
	// handed: the connection has left warmIdleConn's hands, for the pool
	// or closed; a panic of the host's code as it goes (the pool's
	// release tracer, the connection's Close) ends here too.
	handed := false
	defer func() {
		if v := recover(); v != nil && !handed {
			discardAfterPanic(conn)
		}
	}()
	budget := time.Now().Add(s.cfg.OperationTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), budget)
	defer cancel()
	pc := conn.Conn().PgConn()
	st, _, err := s.warm(ctx, pc, budget, budget)
	if err != nil || pc.TxStatus() != 'I' {
		handed = true
		discard(conn)
		return
	}
	pc.CustomData()[s.sql.stateKey] = st
	handed = true
	conn.Release()
}
