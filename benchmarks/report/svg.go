package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
)

// Chart geometry, in SVG user units (pixels at 100%).
const (
	chartWidth = 980
	margin     = 20
	labelRight = 330 // labels end here, right-aligned
	barLeft    = 340
	barMax     = 470 // the longest bar of a panel
	barHeight  = 16
	rowStep    = 22
	lineStep   = 18
)

// bar is one row of a panel.
type bar struct {
	label, value string
	v            float64
	color        string
}

// panel is one group of bars sharing a scale.
type panel struct {
	title string
	bars  []bar
}

// svg accumulates the elements and the height they take.
type svg struct {
	b strings.Builder
	y int
}

func (s *svg) text(x, y int, class, anchor, body string) {
	fmt.Fprintf(&s.b, `<text x="%d" y="%d" class="%s" text-anchor="%s">`, x, y, class, anchor)
	_ = xml.EscapeText(&s.b, []byte(body))
	s.b.WriteString("</text>\n")
}

func (s *svg) panel(p panel) {
	s.y += lineStep
	s.text(margin, s.y, "panel", "start", p.title)
	s.y += 8
	top := 0.0
	for _, b := range p.bars {
		top = max(top, b.v)
	}
	for _, b := range p.bars {
		w := 0.0
		if top > 0 {
			w = b.v / top * barMax
		}
		s.text(labelRight, s.y+barHeight-4, "label", "end", b.label)
		fmt.Fprintf(&s.b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n",
			barLeft, s.y, w, barHeight, b.color)
		s.text(barLeft+int(math.Ceil(w))+6, s.y+barHeight-4, "value", "start", b.value)
		s.y += rowStep
	}
}

// WriteSVG draws one bar per row: a panel per peer scenario and a panel
// per caller count, headed by meta. Either list of rows may be empty.
func WriteSVG(w io.Writer, meta Meta, peers []benchcsv.PeerRow, pg []benchcsv.PGRow) error {
	var s svg
	s.y = margin + 4
	s.text(margin, s.y, "title", "start", "Runlimit against its peers")
	for _, line := range []string{"Machine: " + meta.Machine, "Date: " + meta.Date, "Command: " + meta.Command} {
		s.y += lineStep
		s.text(margin, s.y, "meta", "start", line)
	}
	if len(peers) > 0 {
		s.y += lineStep + 6
		s.text(margin, s.y, "section", "start", "Memory store against Go peers: ns per check, or bytes per key; medians (shorter is better)")
		scenarios, procs := scenariosOf(peers)
		for _, sc := range scenarios {
			p := panel{title: scenarioTitle(sc, procs)}
			for _, r := range peers {
				if r.Scenario == sc {
					p.bars = append(p.bars, bar{label: r.Label, value: peerValue(r), v: nonNaN(metric(r)), color: peerColor(r.Contender)})
				}
			}
			s.panel(p)
		}
	}
	if len(pg) > 0 {
		s.y += lineStep + 6
		s.text(margin, s.y, "section", "start", "PostgreSQL store against its floor and Redis, admissions per second (longer is better)")
		var callers []int
		for _, r := range pg {
			if !slices.Contains(callers, r.Callers) {
				callers = append(callers, r.Callers)
			}
		}
		slices.Sort(callers)
		for _, n := range callers {
			title := fmt.Sprintf("%d concurrent callers", n)
			if n == 1 {
				title = "1 caller"
			}
			p := panel{title: title}
			for _, r := range pg {
				if r.Callers == n {
					p.bars = append(p.bars, bar{label: r.Label, value: thousands(r.Rate) + "/s", v: nonNaN(r.Rate), color: pgColor(r.Contender)})
				}
			}
			s.panel(p)
		}
	}
	height := s.y + margin
	_, err := fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">
<style>
text { fill: #1f2328; font-size: 12px; }
.title { font-size: 18px; font-weight: bold; }
.meta { fill: #57606a; }
.section { font-size: 15px; font-weight: bold; }
.panel { font-weight: bold; }
.value { fill: #57606a; }
</style>
<rect width="100%%" height="100%%" fill="#ffffff"/>
%s</svg>
`, chartWidth, height, chartWidth, height, s.b.String())
	return err
}

func nonNaN(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return v
}

func peerColor(id string) string {
	switch {
	case id == "runlimit-coarse":
		return "#79b8ff"
	case isRunlimit(id):
		return "#0969da"
	}
	return "#8c959f"
}

func pgColor(id string) string {
	switch id {
	case benchcsv.Store:
		return "#0969da"
	case benchcsv.Optimistic:
		return "#79b8ff"
	case benchcsv.Redis:
		return "#cf222e"
	case benchcsv.Floor:
		return "#424a53"
	}
	return "#8c959f"
}
