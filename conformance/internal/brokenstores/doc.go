// Package brokenstores holds a store that can be built with one deliberate
// defect, so that the conformance suite's own tests can prove that each
// defect is caught by the case written for it. The defects are the bugs
// real adapters have: off-by-ones at a window's end, times and counts kept
// in types that cannot hold them, caches that outlive writes, locks taken
// in the caller's order or released too early, partial writes, capacity
// counted wrongly, cleanup and stats that lie, and state a store value
// keeps for itself over a backend that several replicas share
// ([Store.Replica] opens a second store over the same data).
//
// The store locks each key, as a database store does, so that locking
// defects show as they would there. Built without a defect, it passes the
// whole suite, with every optional capability or none, on one partition or
// several, cleaning expired counters per check or only on request: every
// failure comes from the defect alone.
package brokenstores
