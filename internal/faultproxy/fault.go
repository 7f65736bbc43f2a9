package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Match selects requests. Its zero value matches every request.
type Match struct {
	// Verbs the request must have one of; empty means any.
	Verbs []Verb
	// Resource is the plural resource name ("rolebindings"); empty means any.
	// It matches the resource's subresources too (pods matches pods/log).
	Resource string
	// Predicate, when set, must also return true. It runs with the proxy's
	// lock held: it must not call the Proxy (Stats, an Injection's Done, ...).
	Predicate func(*http.Request) bool
}

func (m Match) matches(r *http.Request, info RequestInfo) bool {
	if len(m.Verbs) > 0 && !slices.Contains(m.Verbs, info.Verb) {
		return false
	}
	if m.Resource != "" && m.Resource != info.Resource {
		return false
	}
	return m.Predicate == nil || m.Predicate(r)
}

// FaultKind is what the proxy does to a matching request.
type FaultKind uint8

// The faults a Rule can inject.
const (
	// Gone answers as the API server does for a resourceVersion or continue
	// token that is too old: a LIST (or any other request) with HTTP 410
	// and a Status of reason Expired; a WATCH with HTTP 200 and one ERROR
	// event carrying that Status, after which the stream ends. (The API
	// server never answers a watch with HTTP 410, and client-go's reflector
	// takes another path for each: the open's error goes to its watch error
	// handler, the event's does not.)
	Gone FaultKind = iota + 1
	// TooManyRequests answers 429 with a Retry-After header.
	TooManyRequests
	// InternalError answers 500 with a Status of reason InternalError.
	InternalError
	// Disconnect forwards the request and drops the connection after
	// AfterBytes bytes of the response body: the client sees a body cut
	// short. A body of at most AfterBytes bytes goes through whole (the rule
	// is used up all the same, but Stats counts no disconnect).
	Disconnect
	// Delay waits Delay before forwarding the request.
	Delay
	// Garble forwards the request and answers with the API server's status
	// and headers but a body no client decodes (garbledBody): a LIST page or
	// a watch whose first event cannot be read.
	Garble
)

// garbledBody is what Garble answers with: a length-delimited frame of 16
// bytes (so that a protobuf watch decoder reads a whole frame rather than
// waiting for more) whose bytes are no protobuf message (a varint that
// never ends), no JSON and no Kubernetes protobuf envelope ("k8s\x00").
var garbledBody = append([]byte{0, 0, 0, 16}, bytes.Repeat([]byte{0xff}, 16)...)

// String returns the kind's name, as in Go source.
func (k FaultKind) String() string {
	switch k {
	case Gone:
		return "Gone"
	case TooManyRequests:
		return "TooManyRequests"
	case InternalError:
		return "InternalError"
	case Disconnect:
		return "Disconnect"
	case Delay:
		return "Delay"
	case Garble:
		return "Garble"
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault describes one injected failure. Only the fields of its Kind count.
type Fault struct {
	Kind FaultKind
	// Message is the Status message of Gone, TooManyRequests and
	// InternalError; empty means a message that names the proxy.
	Message string
	// RetryAfter is the Retry-After of TooManyRequests, rounded up to whole
	// seconds (the header's unit); zero means 1s.
	RetryAfter time.Duration
	// AfterBytes is how much of the body Disconnect lets through.
	AfterBytes int64
	// Delay is how long Delay holds the request.
	Delay time.Duration
}

// Rule injects Fault into the requests Match selects: into the next Times
// of them, or into every one until the Injection is removed when Times is 0.
type Rule struct {
	Match Match
	Fault Fault
	Times int
}

func (r Rule) validate() error {
	switch r.Fault.Kind {
	case Gone, TooManyRequests, InternalError, Garble:
	case Disconnect:
		if r.Fault.AfterBytes < 0 {
			return fmt.Errorf("faultproxy: Disconnect after %d bytes: the count is negative", r.Fault.AfterBytes)
		}
	case Delay:
		if r.Fault.Delay < 0 {
			return fmt.Errorf("faultproxy: Delay of %v is negative", r.Fault.Delay)
		}
	default:
		return fmt.Errorf("faultproxy: unknown fault kind %v", r.Fault.Kind)
	}
	if r.Times < 0 {
		return fmt.Errorf("faultproxy: rule for %v fault has negative Times %d", r.Fault.Kind, r.Times)
	}
	return nil
}

// Injection is a Rule in force. Its methods are safe for concurrent use.
type Injection struct {
	p    *Proxy
	rule Rule
	// hits and removed are guarded by p.mu.
	hits    int
	removed bool
}

// Remove stops the rule; requests it already holds (a Delay) go on.
func (in *Injection) Remove() {
	in.p.mu.Lock()
	defer in.p.mu.Unlock()
	in.removeLocked()
}

func (in *Injection) removeLocked() {
	if in.removed {
		return
	}
	in.removed = true
	in.p.rules = slices.DeleteFunc(in.p.rules, func(x *Injection) bool { return x == in })
}

// Hits is the number of requests the rule has been applied to so far (a
// Disconnect counts even when the body was too short to cut).
func (in *Injection) Hits() int {
	in.p.mu.Lock()
	defer in.p.mu.Unlock()
	return in.hits
}

// Done reports whether the rule is spent (all its Times used) or removed.
func (in *Injection) Done() bool {
	in.p.mu.Lock()
	defer in.p.mu.Unlock()
	return in.removed
}

// faultStatus is the metav1.Status a Gone, TooManyRequests or
// InternalError fault answers with, as the API server words its errors,
// and for TooManyRequests the Retry-After in seconds.
func faultStatus(f Fault, info RequestInfo) (st *metav1.Status, retryAfter int) {
	st = &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  f.Message,
	}
	switch f.Kind {
	case Gone:
		st.Code, st.Reason = http.StatusGone, metav1.StatusReasonExpired
		if st.Message == "" && info.Continued {
			st.Message = "faultproxy: the continue token has expired (injected); list again without it"
		} else if st.Message == "" {
			st.Message = "faultproxy: the resource version has expired (injected)"
		}
	case TooManyRequests:
		retryAfter = max(1, int((f.RetryAfter+time.Second-1)/time.Second))
		st.Code, st.Reason = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
		if st.Message == "" {
			st.Message = "faultproxy: too many requests (injected), please try again later"
		}
	case InternalError:
		st.Code, st.Reason = http.StatusInternalServerError, metav1.StatusReasonInternalError
		if st.Message == "" {
			st.Message = "faultproxy: internal error (injected)"
		}
	}
	return st, retryAfter
}

// writeStatus answers with a metav1.Status in JSON, the body the API server
// sends with its errors and that client-go turns into a StatusError.
func writeStatus(w http.ResponseWriter, f Fault, info RequestInfo) {
	st, retryAfter := faultStatus(f, info)
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeJSONStatus(w, st)
}

func writeJSONStatus(w http.ResponseWriter, st *metav1.Status) {
	body, err := json.Marshal(st)
	if err != nil {
		// A Status always marshals; this would be a programming error.
		panic(fmt.Sprintf("faultproxy: marshal Status: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}
