package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// cpuSample is the CPU time used so far by this process and, when the
// server runs on this machine and /proc is readable, by every process with
// the server's command name (postgres, redis-server). Server time of
// backends that exit between samples is lost, so samples are taken while
// the cell's pool is open.
type cpuSample struct {
	client time.Duration
	server time.Duration
	local  bool // server time was found
}

func sampleCPU(server string) cpuSample {
	var s cpuSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime is field 14, stime field 15.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != server {
			continue
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(string(fields[11]), 10, 64)
		stime, _ := strconv.ParseInt(string(fields[12]), 10, 64)
		// Linux reports clock ticks of 1/100 s on every common platform.
		s.server += time.Duration(utime+stime) * 10 * time.Millisecond
		s.local = true
	}
	return s
}
