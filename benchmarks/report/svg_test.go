package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/report"
)

var meta = report.Meta{Machine: "AMD EPYC, 2 vCPU", Date: "2026-12-01", Command: "benchmarks/run.sh --count 6 <quiet>"}

// parsedSVG is what a chart holds, read back with encoding/xml.
type parsedSVG struct {
	root  string
	bars  []map[string]string // attributes of each rect.bar
	texts []string
}

func parseSVG(t *testing.T, b []byte) parsedSVG {
	t.Helper()
	var p parsedSVG
	d := xml.NewDecoder(bytes.NewReader(b))
	inText := false
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the chart must be well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			if p.root == "" {
				p.root = tok.Name.Local
			}
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = a.Value
			}
			if tok.Name.Local == "rect" && attrs["class"] == "bar" {
				p.bars = append(p.bars, attrs)
			}
			if tok.Name.Local == "text" {
				inText = true
				text.Reset()
			}
		case xml.CharData:
			if inText {
				text.Write(tok)
			}
		case xml.EndElement:
			if tok.Name.Local == "text" {
				inText = false
				p.texts = append(p.texts, text.String())
			}
		}
	}
	return p
}

func TestWriteSVGDrawsOneLabelledBarPerRow(t *testing.T) {
	t.Parallel()
	peers, pg := peerRows(), pgRows(9000)
	var buf bytes.Buffer
	require.NoError(t, report.WriteSVG(&buf, meta, peers, pg))
	svg := parseSVG(t, buf.Bytes())

	require.Equal(t, "svg", svg.root)
	require.Len(t, svg.bars, len(peers)+len(pg))
	require.Contains(t, svg.texts, "Machine: AMD EPYC, 2 vCPU")
	require.Contains(t, svg.texts, "Date: 2026-12-01")
	require.Contains(t, svg.texts, "Command: benchmarks/run.sh --count 6 <quiet>", "escaped text reads back as written")
	for _, r := range peers {
		require.Contains(t, svg.texts, r.Label)
	}
	for _, r := range pg {
		require.Contains(t, svg.texts, r.Label)
	}
	require.Contains(t, svg.texts, "x/time <rate> & map")
	require.Contains(t, svg.texts, "100 ns, 0 allocs")
	require.Contains(t, svg.texts, "150 B/key")
	require.Contains(t, svg.texts, "16,000/s")
	require.Contains(t, svg.texts, "one hot key")
	require.Contains(t, svg.texts, "32 concurrent callers")
}

func TestWriteSVGScalesBarsWithinEachPanel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, report.WriteSVG(&buf, meta, peerRows(), nil))
	svg := parseSVG(t, buf.Bytes())
	require.Len(t, svg.bars, len(peerRows()))
	// The hot-key panel's bars, in row order: 300, 100, 80 and 125 ns; the
	// slowest takes the full width.
	widths := make([]string, 4)
	for i := range widths {
		widths[i] = svg.bars[i]["width"]
	}
	require.Equal(t, []string{"470.0", "156.7", "125.3", "195.8"}, widths)
	// A panel of one bar draws it full width, whatever its value.
	require.Equal(t, "470.0", svg.bars[6]["width"], "the parallel panel")
}

func TestWriteSVGWithOneComparisonOnly(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, report.WriteSVG(&buf, meta, nil, pgRows(9000)))
	svg := parseSVG(t, buf.Bytes())
	require.Len(t, svg.bars, len(pgRows(9000)))
	require.NotContains(t, svg.texts, "one hot key")
	for _, b := range svg.bars {
		require.NotEqual(t, b["fill"], "", "every bar is coloured")
	}
}
