package listerwatcher

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leaninformer/leaninformer/pkg/listerwatcher/fake"
)

// One case or more per row of the fault table (README.md, "Faults"), each
// with the decision written out: the rules are what is under test.
func TestClassifyFollowsTheFaultTable(t *testing.T) {
	var (
		boom         = errors.New("boom")
		expired      = apierrors.NewResourceExpired("too old resource version")
		gone         = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone}}
		tooLarge     = fake.TooLargeResourceVersion(10, 5)
		throttled    = apierrors.NewTooManyRequests("slow down", 3)
		refused      = fake.ConnectionRefused()
		internal     = apierrors.NewInternalError(errors.New("etcd hiccup"))
		forbidden    = apierrors.NewForbidden(configMaps, "", errors.New("no"))
		notFound     = apierrors.NewNotFound(configMaps, "")
		unauthorized = apierrors.NewUnauthorized("no token")
		invalid      = apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", nil)
		noStatus     = watchEventError(&corev1.ConfigMap{})
		undecodable  = apierrors.FromObject(apierrors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding").AsObject(errors.New("garbage")))

		firstFromRV          = listing{attempt: attempt{from: "5"}, opts: metav1.ListOptions{Limit: 500, ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}}
		firstNewest          = listing{opts: metav1.ListOptions{Limit: 500}}
		continued            = listing{attempt: attempt{from: "5", announced: true}, opts: metav1.ListOptions{Limit: 500, Continue: "token"}}
		continuedAfterExpiry = listing{attempt: attempt{from: "5", announced: true, afterExpiredContinue: true}, opts: metav1.ListOptions{Limit: 500, Continue: "token"}}
		streamRV             = streaming{attempt{from: "5"}}
		streamNew            = streaming{}
		watchingRV           = watching{rv: "5"}
	)
	const auto, explicit = true, false
	type want struct {
		row int // 1-based, as in the README
		d   Decision
	}
	for _, tc := range []struct {
		name string
		op   Op
		ph   phase
		err  error
		auto bool
		want want
	}{
		{"consumer error while watching", OpConsume, watchingRV, boom, auto,
			want{1, Decision{Cause: CauseConsumer, Next: RelistFromLast, Reason: ConsumerError, Backoff: true, Notify: true}}},
		{"consumer error while listing", OpConsume, continued, boom, explicit,
			want{1, Decision{Cause: CauseConsumer, Next: RelistFromLast, Reason: ConsumerError, Backoff: true, Notify: true}}},

		{"first page from the last rv: expired", OpList, firstFromRV, expired, auto,
			want{2, Decision{Cause: CauseExpired, Next: RelistFromNewest, Verbosity: 4}}},
		{"first page from the last rv: gone", OpList, firstFromRV, gone, auto,
			want{2, Decision{Cause: CauseExpired, Next: RelistFromNewest, Verbosity: 4}}},
		{"first page from the last rv: too large", OpList, firstFromRV, tooLarge, auto,
			want{2, Decision{Cause: CauseTooLargeResourceVersion, Next: RelistFromNewest, Verbosity: 4}}},
		{"continue page expired in a restart for an expired one", OpList, continuedAfterExpiry, expired, auto,
			want{3, Decision{Cause: CauseExpired, Next: RelistWhole, Reason: ExpiredContinue, Verbosity: 4}}},
		{"continue page expired", OpList, continued, expired, auto,
			want{4, Decision{Cause: CauseExpired, Next: RelistFromLast, Reason: ExpiredContinue, Backoff: true, Verbosity: 4}}},
		{"list throttled with Retry-After", OpList, continued, throttled, auto,
			want{5, Decision{Cause: CauseThrottled, Next: RetryRequest, Backoff: true, RetryAfter: 3 * time.Second, Notify: true}}},
		{"list refused", OpList, firstNewest, refused, auto,
			want{5, Decision{Cause: CauseRefused, Next: RetryRequest, Backoff: true, Notify: true}}},
		{"list forbidden", OpList, firstNewest, forbidden, auto,
			want{6, Decision{Cause: CauseForbidden, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
		{"first page from \"\" expired", OpList, firstNewest, expired, auto,
			want{6, Decision{Cause: CauseExpired, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
		{"continue page too large", OpList, continued, tooLarge, auto,
			want{6, Decision{Cause: CauseTooLargeResourceVersion, Next: RelistFromLast, Reason: Error, Backoff: true, RetryAfter: time.Second, Notify: true}}},
		{"unreadable list", OpList, continued, unreadable{errors.New("no metadata")}, auto,
			want{6, Decision{Cause: CauseDecode, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},

		{"stream open throttled", OpWatch, streamNew, throttled, auto,
			want{7, Decision{Cause: CauseThrottled, Next: RetryRequest, Backoff: true, RetryAfter: 3 * time.Second, Verbosity: 2}}},
		{"stream open refused", OpWatch, streamRV, refused, explicit,
			want{7, Decision{Cause: CauseRefused, Next: RetryRequest, Backoff: true, Verbosity: 2}}},
		{"stream open from the last rv too large", OpWatch, streamRV, tooLarge, auto,
			want{8, Decision{Cause: CauseTooLargeResourceVersion, Next: RelistFromNewest, Verbosity: 4}}},
		{"stream open from the last rv expired", OpWatch, streamRV, expired, explicit,
			want{8, Decision{Cause: CauseExpired, Next: RelistFromNewest, Verbosity: 4}}},
		{"Auto: stream open not found (a CRD not installed yet)", OpWatch, streamNew, notFound, auto,
			want{9, Decision{Cause: CauseNotFound, Next: ListOnce, Verbosity: 4}}},
		{"Auto: stream open forbidden", OpWatch, streamRV, forbidden, auto,
			want{9, Decision{Cause: CauseForbidden, Next: ListOnce, Verbosity: 4}}},
		{"Auto: stream open unauthorized", OpWatch, streamNew, unauthorized, auto,
			want{9, Decision{Cause: CauseUnauthorized, Next: ListOnce, Verbosity: 4}}},
		{"Auto: stream open invalid", OpWatch, streamNew, invalid, auto,
			want{10, Decision{Cause: CauseBadRequest, Next: FallBackToList, Verbosity: 4}}},
		{"Auto: stream open from \"\" expired", OpWatch, streamNew, expired, auto,
			want{10, Decision{Cause: CauseExpired, Next: FallBackToList, Verbosity: 4}}},
		{"StreamingList: stream open forbidden", OpWatch, streamNew, forbidden, explicit,
			want{11, Decision{Cause: CauseForbidden, Next: RetryRequest, Backoff: true, Notify: true}}},
		{"stream sends 429", OpStream, streamNew, throttled, auto,
			want{12, Decision{Cause: CauseThrottled, Next: RelistFromLast, Reason: Error, Backoff: true, RetryAfter: 3 * time.Second, Verbosity: 2}}},
		{"stream from the last rv sends 410", OpStream, streamRV, expired, auto,
			want{13, Decision{Cause: CauseExpired, Next: RelistFromNewest, Reason: Expired, Verbosity: 4}}},
		{"Auto: no end bookmark", OpStream, streamNew, ErrNoEndBookmark, auto,
			want{14, Decision{Cause: CauseNoEndBookmark, Next: FallBackToList, Reason: StreamingFallback, Verbosity: 4}}},
		{"Auto: a change before the end bookmark", OpStream, streamRV, ErrNotStreaming, auto,
			want{14, Decision{Cause: CauseNotStreaming, Next: FallBackToList, Reason: StreamingFallback, Verbosity: 4}}},
		{"StreamingList: no end bookmark", OpStream, streamNew, ErrNoEndBookmark, explicit,
			want{15, Decision{Cause: CauseNoEndBookmark, Next: RelistFromLast, Reason: Error, Backoff: true}}},
		{"StreamingList: a change before the end bookmark", OpStream, streamNew, ErrNotStreaming, explicit,
			want{15, Decision{Cause: CauseNotStreaming, Next: RelistFromLast, Reason: Error, Backoff: true}}},
		{"stream sends an object of another type", OpStream, streamNew, fmt.Errorf("%w: *v1.Secret", ErrUnexpectedObject), explicit,
			want{16, Decision{Cause: CauseUnexpectedObject, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
		{"stream's end bookmark without a resourceVersion", OpStream, streamRV, ErrBookmarkWithoutResourceVersion, auto,
			want{17, Decision{Cause: CauseBookmarkWithoutResourceVersion, Next: RelistFromLast, Reason: Error, Backoff: true}}},
		{"stream sends 500", OpStream, streamNew, internal, auto,
			want{18, Decision{Cause: CauseServerError, Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}}},
		{"stream ends before its end bookmark", OpStream, streamRV, ErrStreamEnded, auto,
			want{18, Decision{Cause: CauseStreamEnded, Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}}},
		{"stream sends an ERROR without a Status", OpStream, streamNew, noStatus, explicit,
			want{18, Decision{Cause: CauseDecode, Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}}},

		{"watch open throttled", OpWatch, watchingRV, throttled, auto,
			want{19, Decision{Cause: CauseThrottled, Next: ResumeWatch, Backoff: true, RetryAfter: 3 * time.Second, Verbosity: 4}}},
		{"watch open refused", OpWatch, watchingRV, refused, auto,
			want{19, Decision{Cause: CauseRefused, Next: ResumeWatch, Backoff: true, Verbosity: 4}}},
		{"watch open expired", OpWatch, watchingRV, expired, auto,
			want{20, Decision{Cause: CauseExpired, Next: RelistFromLast, Reason: Expired, Backoff: true, Notify: true}}},
		{"watch open 500", OpWatch, watchingRV, internal, auto,
			want{21, Decision{Cause: CauseServerError, Next: ResumeWatch, Backoff: true, Notify: true}}},
		{"watch open forbidden", OpWatch, watchingRV, forbidden, auto,
			want{22, Decision{Cause: CauseForbidden, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
		{"watch open too large", OpWatch, watchingRV, tooLarge, auto,
			want{22, Decision{Cause: CauseTooLargeResourceVersion, Next: RelistFromLast, Reason: Error, Backoff: true, RetryAfter: time.Second, Notify: true}}},
		{"watch sends 410", OpStream, watchingRV, expired, auto,
			want{23, Decision{Cause: CauseExpired, Next: RelistFromLast, Reason: Expired, Backoff: true, Verbosity: 4}}},
		{"watch sends an event the client cannot decode", OpStream, watchingRV, undecodable, auto,
			want{24, Decision{Cause: CauseDecode, Next: ResumeWatch, Backoff: true}}},
		{"watch sends an object of another type", OpStream, watchingRV, fmt.Errorf("%w: *v1.Secret", ErrUnexpectedObject), auto,
			want{25, Decision{Cause: CauseUnexpectedObject, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
		{"watch sends a bookmark without a resourceVersion", OpStream, watchingRV, ErrBookmarkWithoutResourceVersion, auto,
			want{26, Decision{Cause: CauseBookmarkWithoutResourceVersion, Next: ResumeWatch, Backoff: true}}},
		{"watch sends an older event", OpStream, watchingRV, fmt.Errorf("%w: MODIFIED at 3", ErrStaleEvent), auto,
			want{27, Decision{Cause: CauseStaleEvent, Next: RelistFromLast, Reason: Error, Backoff: true}}},
		{"watch sends 429", OpStream, watchingRV, throttled, auto,
			want{28, Decision{Cause: CauseThrottled, Next: ResumeWatch, Backoff: true, RetryAfter: 3 * time.Second, Verbosity: 2}}},
		{"watch sends 500", OpStream, watchingRV, internal, auto,
			want{29, Decision{Cause: CauseServerError, Next: ResumeWatch, Backoff: true}}},
		{"very short watch", OpStream, watchingRV, ErrVeryShortWatch, auto,
			want{29, Decision{Cause: CauseVeryShortWatch, Next: ResumeWatch, Backoff: true}}},
		{"watch sends 403", OpStream, watchingRV, forbidden, auto,
			want{30, Decision{Cause: CauseForbidden, Next: RelistFromLast, Reason: Error, Backoff: true}}},
		{"watch sends an ERROR without a Status", OpStream, watchingRV, noStatus, auto,
			want{30, Decision{Cause: CauseDecode, Next: RelistFromLast, Reason: Error, Backoff: true}}},

		{"a panic while watching", OpPanic, watchingRV, &PanicError{Value: "bug"}, auto,
			want{31, Decision{Cause: CausePanic, Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}}},
		{"a panic while listing", OpPanic, continued, &PanicError{Value: "bug"}, explicit,
			want{31, Decision{Cause: CausePanic, Next: RelistFromLast, Reason: Error, Backoff: true, Verbosity: 4}}},

		{"a step no phase has", OpWatch, firstNewest, forbidden, auto,
			want{32, Decision{Cause: CauseForbidden, Next: RelistFromLast, Reason: Error, Backoff: true, Notify: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, d := classifyRule(faultOf(tc.op, tc.ph, tc.err, tc.auto))
			if i+1 != tc.want.row || d != tc.want.d {
				t.Errorf("row %d, %+v\nwant row %d, %+v", i+1, d, tc.want.row, tc.want.d)
			}
			if got := classify(tc.op, tc.ph, tc.err, tc.auto); got != d {
				t.Errorf("classify = %+v, classifyRule %+v", got, d)
			}
		})
	}
}

// TestFaultTableInReadme checks that README.md's fault table is the rules,
// row by row: same rows, same order, same words.
func TestFaultTableInReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for line := range strings.SplitSeq(string(readme), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 7 || cells[0] == "#" || strings.HasPrefix(cells[0], "-") {
			continue
		}
		if _, err := fmt.Sscan(cells[0], new(int)); err == nil {
			got = append(got, cells[:6])
		}
	}
	if len(got) != len(rules) {
		t.Errorf("README's fault table has %d rows, the rules %d", len(got), len(rules))
	}
	for i, r := range rules {
		want := []string{fmt.Sprint(i + 1), r.phase, stepName(r.op), r.when, r.d.String(), toldAs(r.d)}
		if i >= len(got) {
			t.Errorf("README lacks row %d: | %s |", i+1, strings.Join(want, " | "))
			continue
		}
		if strings.Join(got[i], " | ") != strings.Join(want, " | ") {
			t.Errorf("README row %d:\n  | %s |\nwant\n  | %s |", i+1, strings.Join(got[i], " | "), strings.Join(want, " | "))
		}
	}
}

func stepName(op Op) string {
	if op == "" {
		return "any"
	}
	return string(op)
}

// toldAs is the README's "told" column: the error handler, or the level the
// failure is logged at.
func toldAs(d Decision) string {
	switch {
	case d.Notify:
		return "handler"
	case d.Verbosity == 0:
		return "warning"
	}
	return fmt.Sprintf("V(%d)", d.Verbosity)
}

func TestCauseNamesAndDescriptions(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		err  error
		want Cause
	}{
		{OpConsume, apierrors.NewForbidden(configMaps, "", errors.New("no")), CauseConsumer},
		{OpStream, watchEventError(&corev1.ConfigMap{}), CauseDecode},
		{OpStream, watchEventError((*metav1.Status)(nil)), CauseDecode},
		{OpStream, watchEventError(nil), CauseDecode},
		{OpStream, fmt.Errorf("wrapped: %w", ErrVeryShortWatch), CauseVeryShortWatch},
		{OpStream, ErrNoEndBookmark, CauseNoEndBookmark},
		{OpStream, ErrNotStreaming, CauseNotStreaming},
		{OpStream, ErrStreamEnded, CauseStreamEnded},
		{OpList, apierrors.NewForbidden(configMaps, "", errors.New("no")), CauseForbidden},
		{OpList, apierrors.NewUnauthorized("who?"), CauseUnauthorized},
		{OpList, apierrors.NewNotFound(configMaps, ""), CauseNotFound},
		{OpList, apierrors.NewTooManyRequests("slow down", 1), CauseThrottled},
		{OpList, apierrors.NewResourceExpired("gone"), CauseExpired},
		{OpList, fake.TooLargeResourceVersion(10, 5), CauseTooLargeResourceVersion},
		{OpList, apierrors.NewTimeoutError("slow", 1), CauseTimeout},
		{OpList, apierrors.NewServerTimeout(configMaps, "list", 1), CauseTimeout},
		{OpList, apierrors.NewInternalError(errors.New("etcd")), CauseServerError},
		{OpList, apierrors.NewServiceUnavailable("starting"), CauseServerError},
		{OpWatch, fake.ConnectionRefused(), CauseRefused},
		{OpWatch, apierrors.NewBadRequest("no"), CauseBadRequest},
		{OpWatch, errors.New("something else"), CauseOther},
	} {
		if got := causeOf(tc.op, tc.err); got != tc.want {
			t.Errorf("causeOf(%s, %v) = %v, want %v", tc.op, tc.err, got, tc.want)
		}
	}
	if d := CauseForbidden.Description(); d != "forbidden by RBAC: the client may not list or watch this resource" {
		t.Errorf("CauseForbidden.Description() = %q", d)
	}
	if got := Cause(200).String(); got != "Cause(200)" {
		t.Errorf("Cause(200).String() = %q", got)
	}
	seen := map[string]bool{}
	for c := CauseOther; c <= CauseBadRequest; c++ {
		if c.Description() == "" || seen[c.Description()] || strings.HasPrefix(c.String(), "Cause(") {
			t.Errorf("cause %d: name %q, description %q: want a name and a description of its own", c, c, c.Description())
		}
		seen[c.Description()] = true
	}
}

func TestDecisionString(t *testing.T) {
	d := Decision{Next: RelistFromLast, Reason: Expired, Backoff: true}
	if got, want := d.String(), "back off, relist from the last rv (Expired)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := Action(99).String(); got != "Action(99)" {
		t.Errorf("Action(99).String() = %q", got)
	}
}

// "Too large resource version" as API servers have said it: since 1.18.6 by
// a cause of its type; 1.17.0 to 1.18.5 by a 504 with a cause carrying only
// the message; before 1.17 by a 504's message alone. client-go's reflector
// (isTooLargeResourceVersionError) takes each of the three for one, and
// nothing else: a first page read at the last rv then lists again from ""
// at once.
func TestTooLargeResourceVersionAsEveryServerSaidIt(t *testing.T) {
	timeout := func(message string, causes ...metav1.StatusCause) error {
		err := apierrors.NewTimeoutError(message, 1)
		err.ErrStatus.Details.Causes = causes
		return err
	}
	firstFromRV := listing{attempt: attempt{from: "5"}, opts: metav1.ListOptions{Limit: 500, ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"1.18.6 and later: a cause of its type", fake.TooLargeResourceVersion(10, 5), true},
		{"the cause's type alone, on another status", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 500, Details: &metav1.StatusDetails{
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}}}}, true},
		{"1.17.0 to 1.18.5: a 504 with a cause carrying the message", timeout("request did not complete", metav1.StatusCause{Message: "Too large resource version"}), true},
		{"before 1.17: a 504 whose message says it", timeout("Too large resource version: 10, current: 5"), true},
		{"wrapped", fmt.Errorf("list: %w", timeout("request did not complete", metav1.StatusCause{Message: "Too large resource version"})), true},
		{"a 504 with another cause", timeout("request did not complete", metav1.StatusCause{Message: "etcd is slow"}), false},
		{"a 504 without causes", timeout("request did not complete"), false},
		{"a 500 with the cause's message", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError,
			Message: "Too large resource version", Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "Too large resource version"}}}}}, false},
	} {
		if got := isTooLarge(tc.err); got != tc.want {
			t.Errorf("%s: isTooLarge(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
		d := classify(OpList, firstFromRV, tc.err, true)
		if got := d.Next == RelistFromNewest && d.Cause == CauseTooLargeResourceVersion; got != tc.want {
			t.Errorf("%s: a first page at the last rv answering it: %v (cause %v), want relist from \"\" at once: %v", tc.name, d, d.Cause, tc.want)
		}
	}
}
