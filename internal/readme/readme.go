// Package readme lets tests hold the README's code blocks to the compiled
// code they were copied from, so the front page cannot drift from what
// builds.
package readme

import (
	"fmt"
	"os"
	"strings"
)

// Blocks returns the fenced code blocks of the Markdown file at path whose
// info string is lang ("go", "text"), in order, without their fences.
func Blocks(path, lang string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case !in && line == "```"+lang:
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		return nil, fmt.Errorf("%s: unterminated code block", path)
	}
	return blocks, nil
}

// FuncBody returns the body of the top-level function declared by the line
// decl (such as "func Example() {") in the Go file at path, dedented by one
// tab and cut before the first line that starts with stop (pass "" to keep
// the whole body).
func FuncBody(path, decl, stop string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if line != decl {
			continue
		}
		var body []string
		for _, l := range lines[i+1:] {
			if l == "}" {
				return strings.Join(body, "\n"), nil
			}
			l = strings.TrimPrefix(l, "\t")
			if stop != "" && strings.HasPrefix(l, stop) {
				return strings.Join(body, "\n"), nil
			}
			body = append(body, l)
		}
		return "", fmt.Errorf("%s: %q has no closing brace", path, decl)
	}
	return "", fmt.Errorf("%s: no line %q", path, decl)
}

// Func returns the whole top-level function declared by decl, from that line
// to its closing brace.
func Func(path, decl string) (string, error) {
	body, err := FuncBody(path, decl, "")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(decl + "\n")
	for _, l := range strings.Split(body, "\n") {
		if l != "" {
			l = "\t" + l
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("}")
	return b.String(), nil
}
