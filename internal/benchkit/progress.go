package benchkit

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress keeps one status line on a terminal up to date. When its writer
// is not a terminal (CI logs), it prints whole lines instead, and of the
// frequent updates only one every few seconds.
type Progress struct {
	w       io.Writer
	tty     bool
	last    int
	printed time.Time
}

// NewProgress writes to w, a terminal or a log.
func NewProgress(w io.Writer) *Progress {
	f, ok := w.(*os.File)
	tty := false
	if ok {
		if fi, err := f.Stat(); err == nil {
			tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	return &Progress{w: w, tty: tty}
}

// Set shows s, an update that may be dropped in a log.
func (p *Progress) Set(s string) {
	if !p.tty && time.Since(p.printed) < 5*time.Second {
		return
	}
	p.show(s)
}

// Step shows s, the start of a step.
func (p *Progress) Step(s string) { p.show(s) }

func (p *Progress) show(s string) {
	p.printed = time.Now()
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", max(0, p.last-len(s))))
	p.last = len(s)
}

// Finish shows s and ends the status line.
func (p *Progress) Finish(s string) {
	p.show(s)
	if p.tty {
		fmt.Fprintln(p.w)
		p.last = 0
	}
}
