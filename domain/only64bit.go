//go:build 386 || arm || mips || mipsle

package domain

// Runlimit builds for 64-bit platforms only: keys and checks are read as
// aligned 64-bit words, and check.go asserts that layout when it compiles.
// On a 32-bit platform that assertion fails with an index out of range;
// this undefined name says why first.
const _ = runlimit_supports_only_64_bit_platforms
