package fake

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The messages of the real API server, so that callers matching on them work.
const (
	inconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
	rvWithContinue = "specifying resource version is not allowed when using continue"
)

var listGK = schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}

// list serves a LIST: a page of at most opts.Limit objects of a consistent
// snapshot that the request's selectors select, in key order. A page is
// followed by others when objects remain after it, selected or not, as with
// the watch cache and etcd3's store; it says how many remain
// (remainingItemCount) only for lists without selectors.
func (s *Server) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := s.admit(ctx, "list", opts); err != nil {
		return nil, err
	}
	sel, err := s.parseSelection(opts)
	if err != nil {
		return nil, err
	}
	if errs := validateList(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(listGK, "", errs)
	}
	if err := sel.checkFields(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Close ran while the Fault hook held the request.
		return nil, ConnectionRefused()
	}
	snap, after, remaining, limit, err := s.listStart(opts)
	if err != nil {
		return nil, err
	}
	if remaining < 0 {
		remaining = s.visibleCount(snap)
	}
	keys := s.sortedKeys()
	i := sort.SearchStrings(keys, after)
	if i < len(keys) && after != "" && keys[i] == after {
		i++
	}
	found := make([]*version, 0, min(int64(s.live), max(limit, 0)))
	var next string // the continue token, when objects remain
	for ; i < len(keys); i++ {
		v := visibleAt(s.heads[keys[i]], snap)
		if v == nil {
			continue
		}
		if limit > 0 && int64(len(found)) == limit {
			next = encodeContinue(snap, remaining-limit, keys[i-1])
			break
		}
		if sel.matches(v.obj) {
			found = append(found, v)
		}
	}
	list, err := s.newList(found)
	if err != nil {
		return nil, err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(formatRV(snap))
	lm.SetContinue(next)
	if next != "" && sel == nil {
		// The API server cannot count what selectors would filter, so it
		// leaves the count out for them.
		lm.SetRemainingItemCount(new(remaining - limit))
	}
	return list, nil
}

// visibleCount counts the objects a read at snap sees: O(1) at the newest
// resourceVersion, a scan of every key at an older one.
func (s *Server) visibleCount(snap uint64) int64 {
	if snap == s.rv {
		return int64(s.live)
	}
	return s.countAfter(snap, "") // every key is after ""
}

// countAfter counts the objects a read at snap sees after key, by a scan.
func (s *Server) countAfter(snap uint64, key string) int64 {
	var n int64
	for k, v := range s.heads {
		if k > key && visibleAt(v, snap) != nil {
			n++
		}
	}
	return n
}

// listStart checks opts against the server's state and returns the
// snapshot to read, the key to start after, how many objects of the snapshot follow
// that key (-1 for a first page: count them) and the page limit (0: no
// limit).
func (s *Server) listStart(opts metav1.ListOptions) (snap uint64, after string, remaining, limit int64, err error) {
	limit = opts.Limit
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return 0, "", 0, 0, apierrors.NewBadRequest(rvWithContinue)
		}
		snap, remaining, after, err = decodeContinue(opts.Continue)
		if err != nil {
			return 0, "", 0, 0, err
		}
		if snap == newestSnap {
			// The token of an expired continue: go on after the same key
			// at the newest resourceVersion.
			return s.rv, after, s.countAfter(s.rv, after), limit, nil
		}
		if snap < s.compacted {
			// etcd3's store offers a token that continues at the newest
			// resourceVersion (handleCompactedErrorForPaging).
			err := apierrors.NewResourceExpired(inconsistentContinue)
			err.ErrStatus.Continue = encodeContinue(newestSnap, 0, after)
			return 0, "", 0, 0, err
		}
		return snap, after, remaining, limit, nil
	}
	switch opts.ResourceVersion {
	case "":
		return s.rv, "", -1, limit, nil
	case "0":
		// Served from the watch cache, which ignores the limit.
		return s.rv, "", -1, 0, nil
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return 0, "", 0, 0, err
	}
	if rv > s.rv {
		return 0, "", 0, 0, TooLargeResourceVersion(rv, s.rv)
	}
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(opts.ResourceVersionMatch == "" && limit > 0)
	if !exact {
		return s.rv, "", -1, limit, nil
	}
	if rv < s.compacted {
		return 0, "", 0, 0, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))
	}
	return rv, "", -1, limit, nil
}

// validateList applies the API server's validation of LIST options.
func validateList(opts metav1.ListOptions) field.ErrorList {
	var errs field.ErrorList
	if match := opts.ResourceVersionMatch; match != "" {
		path := field.NewPath("resourceVersionMatch")
		if opts.ResourceVersion == "" {
			errs = append(errs, field.Forbidden(path, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if opts.Continue != "" {
			errs = append(errs, field.Forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
		}
		if match != metav1.ResourceVersionMatchExact && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(path, match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
		if match == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(path, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	}
	if opts.SendInitialEvents != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	return errs
}

// newList builds the list object, deep-copying each version straight into
// Items as decoding a response would.
func (s *Server) newList(found []*version) (runtime.Object, error) {
	listPtr := reflect.New(s.listType)
	list := listPtr.Interface().(runtime.Object)
	if len(found) == 0 {
		return list, nil
	}
	if !s.deepCopyInto.IsValid() {
		objs := make([]runtime.Object, len(found))
		for i, v := range found {
			objs[i] = v.obj.DeepCopyObject()
		}
		return list, meta.SetList(list, objs)
	}
	items := listPtr.Elem().FieldByName("Items")
	items.Set(reflect.MakeSlice(items.Type(), len(found), len(found)))
	args := make([]reflect.Value, 2)
	for i, v := range found {
		args[0], args[1] = reflect.ValueOf(v.obj), items.Index(i).Addr()
		s.deepCopyInto.Call(args)
	}
	return list, nil
}

// A continue token names the snapshot, how many of its objects remain and
// the last key served. Real tokens are opaque too; callers must not parse
// them.
//
// newestSnap in a token means the newest resourceVersion, whatever it is
// then, as -1 does in a real token; its count of remaining objects is unused.
const newestSnap = 0

func encodeContinue(snap uint64, remaining int64, lastKey string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(formatRV(snap) + "/" + strconv.FormatInt(remaining, 10) + "/" + lastKey))
}

func decodeContinue(token string) (snap uint64, remaining int64, lastKey string, err error) {
	invalid := apierrors.NewBadRequest(fmt.Sprintf("continue key is not valid: %q", token))
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, 0, "", invalid
	}
	rv, rest, ok := strings.Cut(string(raw), "/")
	count, key, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return 0, 0, "", invalid
	}
	if snap, err = parseRV(rv); err != nil {
		return 0, 0, "", invalid
	}
	if remaining, err = strconv.ParseInt(count, 10, 64); err != nil || remaining < 0 {
		return 0, 0, "", invalid
	}
	return snap, remaining, key, nil
}
