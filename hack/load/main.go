// Command load measures informers under sustained load, leaninformer's side
// by side with client-go's: 10,000 ConfigMaps updated at a steady rate for a
// minute, one fast handler alone or beside a slow one (1 ms per call), each
// informer in a fresh child process. It reports the events per second each
// handler got, the time from each write to the handler's call (p50 and p99;
// the write's time travels in an annotation), the heap over time (sampled,
// and the live heap each GC marked) and the process's CPU. `make load` runs
// it; see hack/load/README.md.
//
// Two backends: envtest, a real kube-apiserver and etcd that this process
// starts (or --kubeconfig), populates and writes to, its children watching;
// and fake, the in-memory API server of pkg/listerwatcher/fake, which each
// child runs itself beside its writer, for rates the real one cannot reach
// on a small machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	backends    []string
	rates       []float64 // writes per second; 0 is "max"
	handlerSets []handlerSet
	informers   []informerVariant
	slowAtMax   bool
	objects     int
	runs        int
	duration    time.Duration
	interval    time.Duration
	kubeconfig  string
	out         string
	writers     int
	inflight    int64
	gogc        int
	exe         string // the program children run as
	commandLine string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:]))
	}
	os.Exit(parentMain(os.Args[1:], os.Stdout, os.Stderr))
}

func parentMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "load: %v\n", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "\nload: %v\n", err)
		return 1
	}
	return 0
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backends := fs.String("backends", envtestBackend+","+fakeBackend, "backends, comma-separated: envtest (a real API server), fake (pkg/listerwatcher/fake in each child)")
	rates := fs.String("rates", "500,2000,max", "write rates per second, comma-separated; max writes as fast as the API server takes them (envtest) or keeps --inflight writes ahead of the fast handler (fake)")
	handlers := fs.String("handlers", string(fastOnly)+","+string(fastAndSlow), "handler sets, comma-separated: fast, fast+slow")
	informers := fs.String("informers", strings.Join(defaultInformerNames(), ","), "informers, comma-separated: "+strings.Join(informerNames(), ", ")+" ("+controlInformer+" is client-go's again, a control: its ratios to client-go show the run's noise)")
	fs.BoolVar(&o.slowAtMax, "slow-at-max", false, "also run the slow handler at the max rate, where its queue grows by gigabytes a minute")
	fs.IntVar(&o.objects, "objects", 10000, "ConfigMaps to populate and update")
	fs.IntVar(&o.runs, "runs", 1, "child runs per row; the median is reported")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the writes go on in each run")
	fs.DurationVar(&o.interval, "sample-interval", 500*time.Millisecond, "heap sampling interval of the children")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "envtest backend: use this cluster instead of starting kube-apiserver and etcd")
	fs.StringVar(&o.out, "out", "_output/load", "folder for results.md, results.json, the charts and the children's logs")
	fs.IntVar(&o.writers, "writers", 32, "envtest backend: concurrent write requests")
	fs.Int64Var(&o.inflight, "inflight", 1000, "fake backend, max rate: writes the fast handler may lag behind")
	fs.IntVar(&o.gogc, "gogc", 100, "GOGC of the children")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.backends, err = parseList(*backends, "--backends", func(s string) (string, error) {
		if s != envtestBackend && s != fakeBackend {
			return "", fmt.Errorf("unknown backend %q (known: %s, %s)", s, envtestBackend, fakeBackend)
		}
		return s, nil
	}); err != nil {
		return o, err
	}
	if o.rates, err = parseList(*rates, "--rates", parseRate); err != nil {
		return o, err
	}
	if o.handlerSets, err = parseList(*handlers, "--handlers", parseHandlerSet); err != nil {
		return o, err
	}
	if o.informers, err = parseList(*informers, "--informers", findInformer); err != nil {
		return o, err
	}
	switch {
	case o.objects < 1:
		return o, fmt.Errorf("--objects must be positive, got %d", o.objects)
	case o.runs < 1:
		return o, fmt.Errorf("--runs must be positive, got %d", o.runs)
	case o.duration <= 0:
		return o, fmt.Errorf("--duration must be positive, got %v", o.duration)
	case o.interval <= 0:
		return o, fmt.Errorf("--sample-interval must be positive, got %v", o.interval)
	case o.writers < 1:
		return o, fmt.Errorf("--writers must be positive, got %d", o.writers)
	case o.inflight < 1:
		return o, fmt.Errorf("--inflight must be positive, got %d", o.inflight)
	}
	if o.exe, err = os.Executable(); err != nil {
		return o, fmt.Errorf("find own executable for the children: %w", err)
	}
	o.commandLine = strings.Join(append([]string{"load"}, args...), " ")
	return o, nil
}

// parseList splits a comma-separated flag value and parses each element.
func parseList[T any](value, flagName string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for s := range strings.SplitSeq(value, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		v, err := parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", flagName)
	}
	return out, nil
}

// parseRate reads a positive rate or "max" (0).
func parseRate(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 {
		return 0, fmt.Errorf("rate %q is neither a positive number nor max", s)
	}
	return r, nil
}

func rateName(r float64) string {
	if r == 0 {
		return "max"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
