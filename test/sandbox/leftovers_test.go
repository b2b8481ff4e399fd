package sandbox_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// process is one process of the machine.
type process struct {
	pid, ppid int
	name      string
}

// descendants lists every process below pid (children, grandchildren, ...), read from /proc.
func descendants(pid int) ([]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	children := map[int][]process{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may contain spaces and parentheses, so cut at the last ')'.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		name := s[open+1 : end] // comm: at most 15 characters
		if argv, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(argv) > 0 {
			name = filepath.Base(strings.SplitN(string(argv), "\x00", 2)[0])
		}
		if fields[0] == "Z" {
			name += " (zombie: exited, never waited for)"
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], process{pid: p, ppid: ppid, name: name})
	}
	var out []process
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out, nil
}

// names are the process names, sorted.
func names(ps []process) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.name)
	}
	slices.Sort(out)
	return out
}

// ownListeners lists the TCP sockets in LISTEN state held by this process ("addr:port" in the
// kernel's hex notation of /proc/net/tcp*, which is enough to compare two readings).
func ownListeners() ([]string, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("read fds: %w", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", table, err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) > 9 && fields[3] == listen && inodes[fields[9]] {
				out = append(out, fields[1])
			}
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
	}
	slices.Sort(out)
	return out, nil
}
