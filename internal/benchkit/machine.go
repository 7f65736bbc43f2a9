package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine describes where a benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int    `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// DescribeMachine reads the CPU model, memory and kernel from /proc; what it
// cannot read stays "unknown" or zero.
func DescribeMachine() Machine {
	m := Machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(bytes.NewReader(b))
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = (kb + 1<<19) >> 20
		}
	}
	return m
}

// String is the machine as reports quote it.
func (m Machine) String() string {
	return fmt.Sprintf("%s (%d cores, %d GiB, Linux %s, %s)", m.CPU, m.Cores, m.MemoryGiB, m.Kernel, m.Go)
}
