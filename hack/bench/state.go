package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const (
	// etcdListedMetric counts, by resource and storage, the objects the API
	// server's LISTs returned; storage="etcd" are those read from etcd
	// rather than from the watch cache (k8s.io/apiserver/pkg/storage/metrics).
	// The watch cache's own list when it (re)initializes counts too.
	etcdListedMetric = "apiserver_storage_list_returned_objects_total"
	// cacheInitsMetric counts the watch cache's (re)initializations by
	// resource: each lists the resource from etcd and ends every watch of
	// it (k8s.io/apiserver/pkg/storage/cacher/metrics).
	cacheInitsMetric = "apiserver_watch_cache_initializations_total"
	// consistencyChecksMetric counts the checks of the watch cache against
	// etcd (feature DetectCacheInconsistency, on by default in v1.37.2):
	// every 5 to 7.5 minutes per resource, each lists it whole from etcd
	// (k8s.io/apiserver/pkg/storage/cacher/consistency).
	consistencyChecksMetric = "apiserver_storage_consistency_checks_total"
)

// serverCounts are the API server's counters a child is checked against.
type serverCounts struct {
	etcdListed        float64 // objects of the bench's kind LISTs read from etcd
	cacheInits        float64 // initializations of the kind's watch cache
	consistencyChecks float64 // checks of the kind's watch cache against etcd
}

func (c serverCounts) sub(before serverCounts) serverCounts {
	return serverCounts{
		etcdListed:        c.etcdListed - before.etcdListed,
		cacheInits:        c.cacheInits - before.cacheInits,
		consistencyChecks: c.consistencyChecks - before.consistencyChecks,
	}
}

// serverCounts reads the counters from the API server's /metrics.
func (m *measurer) serverCounts(ctx context.Context) (serverCounts, error) {
	raw, err := m.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return serverCounts{}, fmt.Errorf("read the API server's /metrics (to tell where it served LISTs from): %w", err)
	}
	var c serverCounts
	if c.etcdListed, err = sumSeries(raw, etcdListedMetric, `resource="`+m.o.kind.resource+`"`, `storage="etcd"`); err != nil {
		return serverCounts{}, err
	}
	if c.cacheInits, err = sumSeries(raw, cacheInitsMetric, `resource="`+m.o.kind.resource+`"`); err != nil {
		return serverCounts{}, err
	}
	if c.consistencyChecks, err = sumSeries(raw, consistencyChecksMetric, `resource="`+m.o.kind.resource+`"`); err != nil {
		return serverCounts{}, err
	}
	return c, nil
}

// sumSeries sums the series of metric that carry every one of labels (each
// `name="value"`) in a Prometheus text exposition; 0 when there is none (a
// series appears with its first increment).
func sumSeries(exposition []byte, metric string, labels ...string) (float64, error) {
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		value := line[strings.LastIndexByte(line, ' ')+1:]
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", metric, line, err)
		}
		total += v
	}
	return total, sc.Err()
}

// errNotUnwritten is the measurement of a child of a resource meant to be
// unwritten since the last compaction, but whose paginated LISTs read
// nothing from etcd: the watch cache had a snapshot to serve them from (a
// write during the wait, or the cache re-initialized since). The child is
// measured again after another wait.
var errNotUnwritten = errors.New("the API server read no object from etcd for the child's LISTs: the watch cache held a snapshot since the last compaction it knows of, " +
	"so the row would not measure an unwritten resource")

// errDisturbed is a child's measurement that the API server disturbed: its
// watch cache of the kind re-initialized meanwhile (a full list from etcd
// on the same cores, and every watch ended), it checked that cache against
// etcd (a full list from etcd), or it read objects of the kind from etcd
// for no reason the bench knows while the resource was written just before
// the child. The child is measured again.
var errDisturbed = errors.New("the API server did work of its own on the kind while the child ran")

// checkState checks, from the objects the API server's LISTs read from etcd
// while a child of v ran (fromEtcd), that the child measured the state its
// row is labelled with: a paginated child of a resource nobody wrote since
// the last compaction read its continue pages from etcd, and no child of a
// resource written just before it read anything from etcd (else it was
// disturbed: errDisturbed). A churn child is not held to the latter: after
// the churn's thousands of writes, the API server may answer its relist's
// LISTs from etcd (for instance by falling back when its watch cache has
// not caught up in time), as it would a user's.
func (m *measurer) checkState(v variant, during serverCounts) error {
	switch {
	case during.cacheInits > 0:
		return fmt.Errorf("%w: it re-initialized its watch cache of %s (%.0f objects read from etcd)", errDisturbed, m.o.kind.resource, during.etcdListed)
	case during.consistencyChecks > 0:
		return fmt.Errorf("%w: it checked its watch cache of %s against etcd (%.0f objects read from etcd)", errDisturbed, m.o.kind.resource, during.etcdListed)
	}
	fromEtcd := during.etcdListed
	unwritten := v.unwritten || !m.o.touch
	// Only a list longer than its first page reads continue pages.
	paged := v.mode == listing && (v.ours || v.kind == floorKind) && m.o.pageSize != 0 && int64(m.total) > floorPageSize(m.o.pageSize)
	switch {
	case unwritten && paged && fromEtcd == 0:
		return errNotUnwritten
	case !unwritten && v.churn == 0 && fromEtcd > 0:
		// A LIST of a written resource is served from the watch cache:
		// either the reads were not the child's, or the resource was not
		// in the state the row says.
		return fmt.Errorf("%w: it read %.0f %s from etcd for LISTs, where a resource written just before the child is read from the watch cache", errDisturbed, fromEtcd, m.o.kind.resource)
	}
	return nil
}
