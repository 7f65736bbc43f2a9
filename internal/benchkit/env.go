package benchkit

import (
	"slices"
	"strconv"
	"strings"
)

// ChildEnv is the environment of a benchmark's child process: environ (the
// parent's) without the variables that move a child off the defaults users
// run with, then GOGC=gogc, GOMEMLIMIT=memLimit when memLimit > 0, and
// extra (a variant's own settings) last.
//
// Dropped: GOGC and GOMEMLIMIT, and every KUBE_ variable, the prefix of all
// of client-go's environment switches. Those are its feature gates
// (KUBE_FEATURE_*), which a row describes as client-go's defaults, and its
// debugging aids, which change what is measured: KUBE_CACHE_MUTATION_DETECTOR
// keeps a deep copy of every object an informer stores for two minutes (in
// client-go's informer and our plain store, not in our encoded store, so
// the encoded store's ratios would read about half what users get), and
// KUBE_WATCHLIST_INCONSISTENCY_DETECTOR lists the collection again after
// every streamed list. Kubernetes' own test scripts export both.
func ChildEnv(environ []string, gogc int, memLimit int64, extra ...string) []string {
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "KUBE_")
	})
	env = append(env, "GOGC="+strconv.Itoa(gogc))
	if memLimit > 0 {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(memLimit, 10))
	}
	return append(env, extra...)
}
