package postgres

import (
	"encoding/binary"
	"strings"
)

// checkSettingValues checks the settings sqlSettings read, in binary
// format: the three timeouts it set, then what checkSettings checks.
func checkSettingValues(v [][]byte) error {
	if len(v) != 5 {
		return malformed("reading the session's settings got a malformed row")
	}
	schemas, ok := decodeNameArray(v[4])
	if !ok {
		return malformed("reading the session's settings got a malformed search path")
	}
	return checkSettings(string(v[3]), schemas)
}

// checkSettings checks the session's session_replication_role and its
// effective search path (current_schemas(true)): the settings that change
// what the store's statements do and that it cannot set for its own
// transactions:
//
//   - session_replication_role must be origin. Under replica (or local),
//     the ledger's triggers do not fire, so new counters take no slot,
//     cleanup frees none and the capacity bound is gone, and a storage key
//     could be changed. Only a superuser may set it, so the store cannot
//     set it back; but a superuser may set it for any role.
//   - pg_catalog must be the first schema searched for functions, operators
//     and types. The store qualifies every function and table, but its
//     operators (=, <=, +) and its casts are found by search_path, and a
//     search_path that names another schema before pg_catalog lets that
//     schema's objects stand in for them: an = on bytea that is always
//     true would make an update write every counter.
//
// It returns a *SettingError for the first unsafe setting, nil when both
// are safe.
func checkSettings(role string, schemas []string) error {
	if role != "origin" {
		return &SettingError{Name: "session_replication_role", Value: role, Want: "origin (the capacity ledger's triggers must fire)"}
	}
	for _, schema := range schemas {
		// The session's own temporary schema, searched first unless
		// named later, is searched for tables and types only, and only
		// the session itself creates objects in it.
		if strings.HasPrefix(schema, "pg_temp_") {
			continue
		}
		if schema != "pg_catalog" {
			return &SettingError{Name: "search_path", Value: strings.Join(schemas, ", "),
				Want: "pg_catalog searched first (leave it out of search_path, or name it first)"}
		}
		return nil
	}
	return &SettingError{Name: "search_path", Value: "", Want: "pg_catalog searched first"}
}

// decodeNameArray decodes a one-dimensional array of names or text in
// binary format, without NULL elements.
func decodeNameArray(b []byte) ([]string, bool) {
	if len(b) < 12 {
		return nil, false
	}
	dims := binary.BigEndian.Uint32(b)
	b = b[12:] // dimensions, NULL flag, element type
	switch {
	case dims == 0:
		return nil, true
	case dims != 1 || len(b) < 8:
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[8:] // length, lower bound
	out := make([]string, 0, min(n, 64))
	for range n {
		if len(b) < 4 {
			return nil, false
		}
		size := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if size < 0 || int(size) > len(b) {
			return nil, false
		}
		out = append(out, string(b[:size]))
		b = b[size:]
	}
	return out, len(b) == 0
}
