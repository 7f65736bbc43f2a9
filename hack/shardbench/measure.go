package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/leaninformer/leaninformer/pkg/shard"
)

// row is one measured setup.
type row struct {
	Impl      string `json:"impl"`
	Filtering string `json:"filtering"` // server, client; "" unsharded
	Replicas  int    `json:"replicas"`
	// SyncSeconds: since the replicas' start, until the slowest one's store
	// first held its share (unsharded: its first cache sync).
	SyncSeconds float64 `json:"syncSeconds"`
	// SettleSeconds: from the replicas' start until every object was
	// reconciled and every replica held exactly its share.
	SettleSeconds float64 `json:"settleSeconds"`
	// StoreBytes: each replica's heap after GC minus its heap before its
	// manager was built.
	StoreBytes []int64 `json:"storeBytes,omitempty"`
	Objects    []int   `json:"objects"`
	// SeenFiltering is what the replicas' informers reported.
	SeenFiltering []string `json:"seenFiltering,omitempty"`
	// Hand-over rows: a replica killed (SIGKILL) after settling; the time
	// until the survivors served and held the whole space again, and until
	// they had also reconciled every object they took over.
	Killed                    bool    `json:"killed,omitempty"`
	HandoverSeconds           float64 `json:"handoverSeconds,omitempty"`
	HandoverReconciledSeconds float64 `json:"handoverReconciledSeconds,omitempty"`
	LeaseSeconds              float64 `json:"leaseSeconds,omitempty"`
	// KilledAt is when the parent sent the SIGKILL, to line up with the
	// survivors' logs (klog prints local times to the microsecond).
	KilledAt string `json:"killedAt,omitempty"`
}

func (b *bench) measure(impl, mode string, n int, kill int) error {
	b.group++
	group := fmt.Sprintf("g%d-%s-%d", b.group, impl, n)
	if mode != "" {
		group = fmt.Sprintf("g%d-%s-%d", b.group, mode, n)
	}
	label := fmt.Sprintf("%s, %d replica(s), filtering %q, kill %v", impl, n, mode, kill > 0)
	fmt.Printf("%s: starting\n", label)
	start := time.Now()
	var rs []*replica
	defer func() {
		for _, r := range rs {
			_ = r.stop()
		}
	}()
	for i := range n {
		r, err := b.startReplica(impl, group, fmt.Sprintf("r%d", i), shard.DefaultLeaseDuration)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	sharded := impl == implOursShard
	_, settle, sts, err := b.waitSettled(rs, group, sharded, start)
	if err != nil {
		return fmt.Errorf("%s: %w (last status %+v)", label, err, sts)
	}
	rw := row{Impl: impl, Filtering: mode, Replicas: n, SettleSeconds: settle.Seconds()}
	seen := map[string]bool{}
	for _, st := range sts {
		rw.SyncSeconds = max(rw.SyncSeconds, st.HeldAt)
		rw.Objects = append(rw.Objects, st.Objects)
		if st.Filtering != "" && !seen[st.Filtering] {
			seen[st.Filtering] = true
			rw.SeenFiltering = append(rw.SeenFiltering, st.Filtering)
		}
	}
	if kill == 0 {
		for _, r := range rs {
			heap, err := r.measureHeap()
			if err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
			rw.StoreBytes = append(rw.StoreBytes, heap)
		}
	} else {
		victim := rs[0]
		killed := victim.kill()
		fmt.Printf("%s: killed replica %s at %s\n", label, victim.id, killed.Format(killTimeLayout))
		rs = rs[1:]
		held, handover, sts, err := b.waitSettled(rs, group, true, killed)
		if err != nil {
			return fmt.Errorf("%s, after the kill: %w (last status %+v)", label, err, sts)
		}
		rw.Killed, rw.LeaseSeconds = true, shard.DefaultLeaseDuration.Seconds()
		rw.HandoverSeconds, rw.HandoverReconciledSeconds = held.Seconds(), handover.Seconds()
		rw.KilledAt = killed.Format(killTimeLayout)
		// The killed replica's Lease stays, with its finalizer; the group
		// is not used again.
	}
	fmt.Printf("%s: settled after %.1fs, slowest store held its share after %.1fs, objects %v, store %v, hand-over %.1fs (all reconciled %.1fs)\n",
		label, rw.SettleSeconds, rw.SyncSeconds, rw.Objects, mib(rw.StoreBytes), rw.HandoverSeconds, rw.HandoverReconciledSeconds)
	b.rows = append(b.rows, rw)
	return nil
}

// killTimeLayout matches klog's header (date, then local time to the
// microsecond), with the year.
const killTimeLayout = "2006-01-02 15:04:05.000000"

func mib(bs []int64) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
	return out
}

func (b *bench) report() error {
	var base float64 // our unsharded replica's store
	for _, rw := range b.rows {
		if rw.Impl == implOurs && len(rw.StoreBytes) > 0 {
			base = float64(rw.StoreBytes[0])
		}
	}
	var md strings.Builder
	fmt.Fprintf(&md, "%d ConfigMaps of about 1 KiB; reconciles wait %v each, %d at a time per replica; client rate limit QPS %d, burst %d per replica (--qps/--burst); default Lease durations (15 s).\n\n",
		b.o.objects, b.o.work, b.o.concurrency, b.o.qps, b.o.burst)
	md.WriteString("| setup | filtering | replicas | store per replica, MiB (max / mean) | max x N / unsharded | slowest store holding its share | all reconciled after | objects reconciled per second from the start |\n")
	md.WriteString("|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, rw := range b.rows {
		if rw.Killed {
			continue
		}
		var maxB, sum float64
		for _, s := range rw.StoreBytes {
			maxB = max(maxB, float64(s))
			sum += float64(s)
		}
		mean := sum / float64(len(rw.StoreBytes))
		ratio := "-"
		if base > 0 && rw.Impl == implOursShard {
			ratio = fmt.Sprintf("%.2f", maxB*float64(rw.Replicas)/base)
		}
		filtering := rw.Filtering
		if filtering == "" {
			filtering = "unsharded"
		}
		fmt.Fprintf(&md, "| %s | %s | %d | %.1f / %.1f | %s | %.1f s | %.1f s | %.0f |\n", setupName(rw.Impl), filtering, rw.Replicas,
			maxB/(1<<20), mean/(1<<20), ratio, rw.SyncSeconds, rw.SettleSeconds, float64(b.o.objects)/rw.SettleSeconds)
	}
	md.WriteString("\n| filtering | replicas | one killed: served and held again after | over the lease duration | and its objects reconciled after |\n|---|--:|--:|--:|--:|\n")
	for _, rw := range b.rows {
		if rw.Killed {
			fmt.Fprintf(&md, "| %s | %d | %.1f s | %+.1f s | %.1f s |\n", rw.Filtering, rw.Replicas, rw.HandoverSeconds, rw.HandoverSeconds-rw.LeaseSeconds, rw.HandoverReconciledSeconds)
		}
	}
	fmt.Print("\n" + md.String())
	if err := os.WriteFile(filepath.Join(b.o.out, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(b.rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(b.o.out, "results.json"), js, 0o644)
}

func setupName(impl string) string {
	switch impl {
	case implClientGo:
		return "controller-runtime's cache (client-go)"
	case implOurs:
		return "leaninformer, unsharded"
	default:
		return "leaninformer, sharded"
	}
}
