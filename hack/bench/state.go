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

// etcdListedMetric counts, by resource and storage, the objects the API
// server's LISTs returned; storage="etcd" are those read from etcd rather
// than from the watch cache (k8s.io/apiserver/pkg/storage/metrics).
const etcdListedMetric = "apiserver_storage_list_returned_objects_total"

// etcdListed reads from the API server's /metrics how many objects of the
// bench's kind its LISTs have read from etcd so far.
func (m *measurer) etcdListed(ctx context.Context) (float64, error) {
	raw, err := m.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the API server's /metrics (to tell where it served LISTs from): %w", err)
	}
	return countEtcdListed(raw, m.o.kind.resource)
}

// countEtcdListed sums etcdListedMetric's etcd series of resource in a
// Prometheus text exposition (0 before the API server read any from etcd:
// a series appears with its first increment).
func countEtcdListed(exposition []byte, resource string) (float64, error) {
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, etcdListedMetric+"{") ||
			!strings.Contains(line, `resource="`+resource+`"`) || !strings.Contains(line, `storage="etcd"`) {
			continue
		}
		value := line[strings.LastIndexByte(line, ' ')+1:]
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", etcdListedMetric, line, err)
		}
		total += v
	}
	return total, sc.Err()
}

// checkState checks, from the objects the API server's LISTs read from etcd
// while a child of v ran (fromEtcd), that the child measured the state its
// row is labelled with: a paginated child of a resource nobody wrote since
// the last compaction read its continue pages from etcd, and no child of a
// resource written just before it read anything from etcd. A churn child is
// not held to the latter: after the churn's thousands of writes, the API
// server may answer its relist's LISTs from etcd (for instance by falling back
// when its watch cache has not caught up in time), as it would a user's.
func (m *measurer) checkState(v variant, fromEtcd float64) error {
	unwritten := v.unwritten || !m.o.touch
	// Only a list longer than its first page reads continue pages.
	paged := v.mode == listing && (v.ours || v.kind == floorKind) && m.o.pageSize != 0 && int64(m.total) > floorPageSize(m.o.pageSize)
	switch {
	case unwritten && paged && fromEtcd == 0:
		return errors.New("the API server read no object from etcd for its LISTs, so the resource was written since the last compaction its watch cache knows of, " +
			"and the row would not measure an unwritten resource (was it written during the wait? see --etcd-compaction-interval)")
	case !unwritten && v.churn == 0 && fromEtcd > 0:
		return fmt.Errorf("the API server read %.0f %s from etcd for its LISTs, where a resource written just before the child is read from the watch cache", fromEtcd, m.o.kind.resource)
	}
	return nil
}
