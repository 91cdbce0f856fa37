package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runlimit/runlimit/domain"
)

// floor is not a limiter: it is the part of SPEC section 5's admission that
// no implementation can leave out, measured so that the store can be judged
// against what its protocol allows. Two pipelined round trips in one
// transaction on the store's own table: BEGIN and the row lock, then the
// write and COMMIT. It takes no advisory lock, no ledger lock, no clock
// sample and no timeouts, evaluates nothing, and sends its statements the
// way the store does (prepared once per connection, binary parameters,
// through pgconn). Its rate is a ceiling for any store that keeps the
// protocol's two round trips and its commit on this server.
type floor struct {
	pool   *pgxpool.Pool
	checks [][]domain.Check
}

const (
	sqlFloorLock = `SELECT used FROM runlimit_fixed_windows
WHERE config_fingerprint = $1 AND subject_key = $2 FOR UPDATE`
	sqlFloorUpdate = `UPDATE runlimit_fixed_windows SET used = used + 1
WHERE config_fingerprint = $1 AND subject_key = $2`
	sqlFloorInsert = `INSERT INTO runlimit_fixed_windows
    (policy_id, scope_id, config_fingerprint, subject_key, window_started_at, window_expires_at, used)
VALUES ($1, $2, $3, $4, pg_catalog.now(), pg_catalog.now() + interval '1 hour', 1)`
)

var floorStatements = [...]struct{ name, sql string }{
	{"pgload_floor_begin", "BEGIN"},
	{"pgload_floor_lock", sqlFloorLock},
	{"pgload_floor_update", sqlFloorUpdate},
	{"pgload_floor_insert", sqlFloorInsert},
	{"pgload_floor_commit", "COMMIT"},
}

// binary1, as a format list of one, puts every parameter or result column
// in binary format.
var binary1 = []int16{1}

func (f *floor) check(ctx context.Context, caller, key int) (bool, error) {
	c := f.checks[caller][key]
	kb := c.CounterKey().Bytes()
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var sd [len(floorStatements)]*pgconn.StatementDescription
	for i, st := range floorStatements {
		if sd[i], err = conn.Conn().Prepare(ctx, st.name, st.sql); err != nil {
			return false, err
		}
	}
	pg := conn.Conn().PgConn()

	var q pgconn.Batch
	q.ExecStatement(sd[0], nil, nil, nil)
	q.ExecStatement(sd[1], [][]byte{kb[:32], kb[32:]}, binary1, binary1)
	results, err := pg.ExecBatch(ctx, &q).ReadAll()
	if err != nil {
		_ = pg.Close(context.Background()) // a connection in an unknown state is not pooled
		return false, err
	}
	present := len(results) == 2 && len(results[1].Rows) == 1

	var w pgconn.Batch
	if present {
		w.ExecStatement(sd[2], [][]byte{kb[:32], kb[32:]}, binary1, nil)
	} else {
		p := c.Policy()
		w.ExecStatement(sd[3], [][]byte{[]byte(p.ID().String()), []byte(p.Scope().String()), kb[:32], kb[32:]}, binary1, nil)
	}
	w.ExecStatement(sd[4], nil, nil, nil)
	results, err = pg.ExecBatch(ctx, &w).ReadAll()
	if err != nil {
		_ = pg.Close(context.Background()) // a connection in an unknown state is not pooled
		return false, err
	}
	if len(results) != 2 || results[1].CommandTag.String() != "COMMIT" {
		return false, errors.New("floor: the write did not commit")
	}
	if n := results[0].CommandTag.RowsAffected(); n != 1 {
		return false, fmt.Errorf("floor: the write changed %d rows", n)
	}
	return true, nil
}
