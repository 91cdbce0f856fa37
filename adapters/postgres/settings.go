package postgres

import "strings"

// checkSettingValues checks the settings sqlSettings read, in binary
// format: the three timeouts it set, then what checkSettings checks.
func checkSettingValues(v [][]byte) error {
	if len(v) != 5 {
		return malformed("reading the session's settings got a malformed row")
	}
	return checkSettings(string(v[3]), string(v[4]))
}

// checkSettings checks the session's session_replication_role and its
// search_path, as set (current_setting): the settings that change what the
// store's statements do and that it cannot set for its own transactions:
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
// The search_path is judged as written, not by the schemas it reaches now
// (current_schemas): the server skips a schema that does not exist, but a
// role holding CREATE on the database may create it later, and the server
// then analyses every statement prepared on the connection again, under
// the new path. So every schema named before pg_catalog counts, "$user"
// included, except pg_temp, the session's own temporary schema, which is
// never searched for functions or operators, and in which only the session
// itself creates objects. A search_path that does not name pg_catalog
// searches it first.
//
// It returns a *SettingError for the first unsafe setting, nil when both
// are safe.
func checkSettings(role, searchPath string) error {
	if role != "origin" {
		return &SettingError{Name: "session_replication_role", Value: role, Want: "origin (the capacity ledger's triggers must fire)"}
	}
	if !catalogFirst(searchPath) {
		return &SettingError{Name: "search_path", Value: searchPath,
			Want: "pg_catalog searched first (leave it out of search_path, or name it first)"}
	}
	return nil
}

// catalogFirst reports whether searchPath, a search_path setting, has
// pg_catalog searched before any schema but pg_temp: it does not name
// pg_catalog, or names nothing but pg_temp before it. A setting it cannot
// read is not.
func catalogFirst(searchPath string) bool {
	names, ok := splitIdentifiers(searchPath)
	if !ok {
		return false
	}
	named := false
	for _, name := range names {
		named = named || name == "pg_catalog"
	}
	if !named {
		return true
	}
	for _, name := range names {
		switch name {
		case "pg_catalog":
			return true
		case "pg_temp":
		default:
			return false
		}
	}
	return false
}

// splitIdentifiers splits a list setting such as search_path into its
// names as the server reads it: separated by commas, each either quoted
// ("" inside quotes is one "), kept as written, or bare, lower-cased
// (ASCII letters only) and ending at a comma or white space. It reports
// false for a list the server would not accept.
func splitIdentifiers(s string) ([]string, bool) {
	var names []string
	i := skipSpace(s, 0)
	if i == len(s) {
		return nil, true
	}
	for {
		var name string
		if s[i] == '"' {
			var b strings.Builder
			i++
			for {
				j := strings.IndexByte(s[i:], '"')
				if j < 0 {
					return nil, false
				}
				b.WriteString(s[i : i+j])
				i += j + 1
				if i < len(s) && s[i] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			name = b.String()
		} else {
			start := i
			for i < len(s) && s[i] != ',' && !isSpace(s[i]) {
				i++
			}
			if i == start {
				return nil, false
			}
			name = lowerASCII(s[start:i])
		}
		names = append(names, name)
		i = skipSpace(s, i)
		switch {
		case i == len(s):
			return names, true
		case s[i] != ',':
			return nil, false
		}
		i = skipSpace(s, i+1)
		if i == len(s) {
			return nil, false
		}
	}
}

// isSpace reports whether c is white space to the server's scanner.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// lowerASCII lower-cases the ASCII letters of s, as the server folds a
// bare identifier under a multi-byte encoding.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
