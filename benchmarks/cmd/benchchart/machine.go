package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine describes this machine for the chart: processor model, logical
// CPUs, memory, platform and Go version.
func machine() string {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	meminfo, _ := os.ReadFile("/proc/meminfo")
	return describe(string(cpuinfo), string(meminfo), runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, runtime.Version())
}

func describe(cpuinfo, meminfo string, cpus int, platform, goVersion string) string {
	parts := []string{}
	if model := field(cpuinfo, "model name"); model != "" {
		parts = append(parts, model)
	}
	parts = append(parts, fmt.Sprintf("%d vCPU", cpus))
	if kb, err := strconv.ParseInt(strings.TrimSuffix(field(meminfo, "MemTotal"), " kB"), 10, 64); err == nil {
		parts = append(parts, fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20)))
	}
	return strings.Join(append(parts, platform, goVersion), ", ")
}

// field returns the value of the first "name : value" line of a /proc
// file, or "".
func field(text, name string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
