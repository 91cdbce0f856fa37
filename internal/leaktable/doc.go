// Package leaktable holds one test, the leak table: a value of every type
// and every error variable that Runlimit's packages export, built to hold
// a key secret, a database password, a subject and key bytes wherever the
// type can hold them, printed through every printer [leakcheck] knows,
// alone and nested in host structs. The test reads each package's source
// and fails when a type or an error variable has no value in the table,
// so a package that grows a type grows the table.
//
// The package has no code of its own: it imports every package it prints,
// which no one of them may do.
package leaktable
