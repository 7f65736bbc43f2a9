package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// CPUSeconds returns the CPU time (user and system, all threads) the process
// has used so far, or 0 if the kernel does not say.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// ResetPeakRSS resets the kernel's VmHWM to the current RSS (Linux >= 4.0),
// so that a measuring window's peak RSS is its own: getrusage in a child
// would report the parent's peak, and VmHWM the process's whole life.
func ResetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset peak RSS through /proc/self/clear_refs: %w", err)
	}
	return nil
}

// ProcStatus returns a "kB" field of /proc/self/status, such as VmRSS or
// VmHWM, in bytes.
func ProcStatus(field string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		name, value, ok := bytes.Cut(s.Bytes(), []byte(":"))
		if !ok || string(name) != field {
			continue
		}
		num, _, _ := bytes.Cut(bytes.TrimSpace(value), []byte(" "))
		kb, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status %s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/self/status has no %s", field)
}

// LoadAverage returns the machine's load average over the last minute
// (/proc/loadavg): how many runnable tasks shared its cores, other
// programs' included.
func LoadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	first, _, _ := bytes.Cut(b, []byte(" "))
	v, err := strconv.ParseFloat(string(first), 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/loadavg: %w", err)
	}
	return v, nil
}
