// Package brokenstores holds a small map-and-mutex store that can be built
// with one deliberate defect, so the conformance suite's own tests can prove
// that each defect is caught by the scenario written for it. Built without a
// defect, the same store passes the whole suite, which shows that every
// failure comes from the defect alone.
package brokenstores
