package benchcsv

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// number formats v for a cell: empty for NaN, otherwise rounded to three
// decimals (a thousandth of a nanosecond or byte is far below any noise),
// which keeps the mean of two medians from printing as 235.04999999999998.
func number(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// records reads every record after a header that must equal want.
func records(r io.Reader, want []string) ([][]string, error) {
	cr := csv.NewReader(r)
	// Any header reads, so that a file of another layout is reported by
	// its header rather than by its width; every record after it must be
	// as wide as want.
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("benchcsv: empty file, want header %v", want)
	}
	if err != nil {
		return nil, fmt.Errorf("benchcsv: %w", err)
	}
	if !slices.Equal(header, want) {
		return nil, fmt.Errorf("benchcsv: header %v, want %v", header, want)
	}
	cr.FieldsPerRecord = len(want)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("benchcsv: %w", err)
	}
	return recs, nil
}

// parser converts cells and keeps the first error, naming line and column.
type parser struct {
	line int
	err  error
}

func (p *parser) float(column, s string) float64 {
	if s == "" {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		p.fail(column, s)
		return math.NaN()
	}
	return v
}

func (p *parser) int(column, s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		p.fail(column, s)
	}
	return v
}

func (p *parser) fail(column, s string) {
	if p.err == nil {
		p.err = fmt.Errorf("benchcsv: line %d: %s is %q, not a number", p.line, column, s)
	}
}
