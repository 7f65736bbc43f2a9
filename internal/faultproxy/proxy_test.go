package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	rbPath   = "/apis/rbac.authorization.k8s.io/v1/rolebindings"
	podsPath = "/api/v1/namespaces/ns/pods"
)

// backend is a fake API server that records the requests it gets. A path
// with a registered stream handler streams; the others get a small body.
type backend struct {
	*httptest.Server
	mu      sync.Mutex
	seen    []string // method and request URI of every request
	streams map[string]http.HandlerFunc
}

func newBackend(t *testing.T, streams map[string]http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{streams: streams}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.seen = append(b.seen, r.Method+" "+r.URL.RequestURI())
	b.mu.Unlock()
	if h := b.streams[r.URL.Path]; h != nil {
		h(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Backend", "yes")
	fmt.Fprintf(w, `{"kind":"RoleBindingList","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{},"items":[]}%s`, body)
}

func (b *backend) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// streamLines is a backend handler that writes each line of lines when the
// test sends on its channel, flushing each, then stays open until the
// request ends.
func streamLines(next <-chan string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case line, ok := <-next:
				if !ok {
					return
				}
				fmt.Fprintln(w, line)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
}

func newProxy(t *testing.T, target *rest.Config) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// newClient returns an HTTP client with its own connections, closed at the
// end of the test so that no keep-alive goroutine outlives it.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, body
}

// waitFor polls cond; the deadline only turns a hang into a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustInject(t *testing.T, p *Proxy, r Rule) *Injection {
	t.Helper()
	in, err := p.Inject(r)
	if err != nil {
		t.Fatalf("Inject: %v", err)
	}
	return in
}

// openStream starts a GET and returns the response once its headers are in.
func openStream(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestForwardsRequestAndResponse(t *testing.T) {
	var gotAuth, gotQuery string
	b := newBackend(t, map[string]http.HandlerFunc{
		"/api/v1/namespaces/ns/configmaps": func(w http.ResponseWriter, r *http.Request) {
			gotAuth, gotQuery = r.Header.Get("Authorization"), r.URL.RawQuery
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Echo", "1")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		},
	})
	p := newProxy(t, &rest.Config{Host: b.URL, BearerToken: "secret-token"})

	resp, err := newClient(t).Post(p.URL()+"/api/v1/namespaces/ns/configmaps?fieldManager=me", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatalf("POST through proxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(body) != `{"a":1}` || resp.Header.Get("X-Echo") != "1" {
		t.Errorf("response = %d %q (X-Echo %q), want 201 with the request body echoed", resp.StatusCode, body, resp.Header.Get("X-Echo"))
	}
	if gotAuth != "Bearer secret-token" {
		t.Errorf("upstream Authorization = %q, want the target's bearer token", gotAuth)
	}
	if gotQuery != "fieldManager=me" {
		t.Errorf("upstream query = %q, want fieldManager=me", gotQuery)
	}
}

func TestStreamsEachChunkAtOnce(t *testing.T) {
	lines := make(chan string)
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: streamLines(lines)})
	p := newProxy(t, &rest.Config{Host: b.URL})

	resp := openStream(t, newClient(t), p.URL()+rbPath+"?watch=true")
	r := bufio.NewReader(resp.Body)
	for _, want := range []string{"first", "second"} {
		// The backend writes the next line only after the client has read
		// this one: a proxy that buffers would deadlock here.
		lines <- want
		got, err := r.ReadString('\n')
		if err != nil || got != want+"\n" {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	close(lines)
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the backend ended: %q, %v; want a clean end", rest, err)
	}
}

func TestCountsRequestsByKind(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)
	for _, path := range []string{
		rbPath,
		rbPath + "?limit=500",
		rbPath + "?limit=500&continue=abc",
		rbPath + "?watch=true",
		rbPath + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
		"/apis/rbac.authorization.k8s.io/v1/watch/rolebindings",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/rb1",
		"/version",
	} {
		get(t, c, p.URL()+path)
	}
	want := RequestCounts{Lists: 3, ListsWithLimit: 2, ListsWithContinue: 1, Watches: 3, StreamingWatches: 1, Other: 2}
	if got := p.Stats().Requests; got != want {
		t.Errorf("Stats().Requests = %+v, want %+v", got, want)
	}
}

func TestStatusFaults(t *testing.T) {
	for _, tc := range []struct {
		fault     Fault
		code      int
		isErr     func(error) bool
		wantRetry string
	}{
		{Fault{Kind: Gone}, http.StatusGone, apierrors.IsResourceExpired, ""},
		{Fault{Kind: TooManyRequests, RetryAfter: 1500 * time.Millisecond}, http.StatusTooManyRequests, apierrors.IsTooManyRequests, "2"},
		{Fault{Kind: InternalError}, http.StatusInternalServerError, apierrors.IsInternalError, ""},
	} {
		t.Run(tc.fault.Kind.String(), func(t *testing.T) {
			b := newBackend(t, nil)
			p := newProxy(t, &rest.Config{Host: b.URL})
			c := newClient(t)
			in := mustInject(t, p, Rule{Match: Match{Verbs: []Verb{List}, Resource: "rolebindings"}, Fault: tc.fault, Times: 2})

			// Not matching: another resource, another verb.
			for _, path := range []string{podsPath, rbPath + "?watch=true"} {
				if resp, _ := get(t, c, p.URL()+path); resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s = %d, want 200: the rule does not match it", path, resp.StatusCode)
				}
			}
			for i := range 2 {
				resp, body := get(t, c, p.URL()+rbPath)
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatalf("request %d: body %q is not a Status: %v", i, body, err)
				}
				if resp.StatusCode != tc.code || st.Code != int32(tc.code) || st.Kind != "Status" {
					t.Errorf("request %d: HTTP %d, Status %+v; want code %d", i, resp.StatusCode, st, tc.code)
				}
				if err := apierrors.FromObject(&st); !tc.isErr(err) {
					t.Errorf("request %d: error %v is not a %v", i, err, tc.fault.Kind)
				}
				if got := resp.Header.Get("Retry-After"); got != tc.wantRetry {
					t.Errorf("request %d: Retry-After %q, want %q", i, got, tc.wantRetry)
				}
			}
			if resp, _ := get(t, c, p.URL()+rbPath); resp.StatusCode != http.StatusOK {
				t.Errorf("third list = %d, want 200 once the rule is spent", resp.StatusCode)
			}
			if in.Hits() != 2 || !in.Done() {
				t.Errorf("Hits() = %d, Done() = %v; want 2, true", in.Hits(), in.Done())
			}
			if got := len(b.requests()); got != 3 {
				t.Errorf("backend got %d requests, want 3 (faulted ones never reach it)", got)
			}
		})
	}
}

func TestGoneIsExpiredForClientGo(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	mustInject(t, p, Rule{Match: Match{Verbs: []Verb{List}}, Fault: Fault{Kind: Gone}, Times: 1})
	cs, err := kubernetes.NewForConfigAndClient(p.ClientConfig(), newClient(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.RbacV1().RoleBindings("").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("List through the proxy: %v, want a StatusError of reason Expired", err)
	}
	if _, err := cs.RbacV1().RoleBindings("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Errorf("second List: %v, want success once the rule is spent", err)
	}
}

func TestDisconnectAfterBytes(t *testing.T) {
	const chunk = "0123456789"
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: func(w http.ResponseWriter, r *http.Request) {
		for range 10 {
			_, _ = io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
		}
	}})
	p := newProxy(t, &rest.Config{Host: b.URL})
	mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Disconnect, AfterBytes: 25}, Times: 1})
	c := newClient(t)

	resp, err := c.Get(p.URL() + rbPath)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != strings.Repeat(chunk, 3)[:25] {
		t.Errorf("body %q, error %v; want the first 25 bytes and an unexpected EOF", body, err)
	}
	if _, body := get(t, c, p.URL()+rbPath); len(body) != 100 {
		t.Errorf("second response has %d bytes, want all 100", len(body))
	}
	if got := p.Stats().Faults.Disconnects; got != 1 {
		t.Errorf("Faults.Disconnects = %d, want 1", got)
	}
}

func TestGarbleAnswersWhatNoDecoderReads(t *testing.T) {
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = io.WriteString(w, "a body the proxy replaces")
	}})
	p := newProxy(t, &rest.Config{Host: b.URL})
	mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Garble}, Times: 1})
	c := newClient(t)

	resp, body := get(t, c, p.URL()+rbPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.Equal(body, garbledBody) {
		t.Errorf("garbled response %d %q, body %q; want the backend's status and type with the garbled body", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if _, body := get(t, c, p.URL()+rbPath); string(body) != "a body the proxy replaces" {
		t.Errorf("second response %q, want the backend's", body)
	}
	if got := p.Stats().Faults.Garbled; got != 1 {
		t.Errorf("Faults.Garbled = %d, want 1", got)
	}
	// Neither the JSON nor the protobuf decoder of client-go reads it, as a
	// whole body or as a watch frame's content.
	for _, data := range [][]byte{garbledBody, garbledBody[4:]} {
		if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil); err == nil {
			t.Errorf("client-go decoded %q into %T", data, obj)
		}
	}
}

func TestExpireContinueTokens(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)
	in, err := p.ExpireContinueTokens("rolebindings", 0)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, c, p.URL()+rbPath+"?limit=2"); resp.StatusCode != http.StatusOK {
		t.Errorf("first page = %d, want 200", resp.StatusCode)
	}
	for range 2 {
		resp, body := get(t, c, p.URL()+rbPath+"?limit=2&continue=token")
		var st metav1.Status
		_ = json.Unmarshal(body, &st)
		if resp.StatusCode != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
			t.Errorf("page with continue = %d %q, want 410 Expired", resp.StatusCode, st.Reason)
		}
	}
	in.Remove()
	if resp, _ := get(t, c, p.URL()+rbPath+"?limit=2&continue=token"); resp.StatusCode != http.StatusOK {
		t.Errorf("after Remove = %d, want 200", resp.StatusCode)
	}
	if got := p.Stats().Faults.Gone; got != 2 {
		t.Errorf("Faults.Gone = %d, want 2", got)
	}
}

func TestDelayHoldsTheRequest(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)
	mustInject(t, p, Rule{Match: Match{Resource: "pods"}, Fault: Fault{Kind: Delay, Delay: time.Hour}})
	mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Delay, Delay: time.Microsecond}})

	ctx, cancel := context.WithCancel(context.Background())
	delayed := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+podsPath, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		delayed <- err
	}()
	if resp, _ := get(t, c, p.URL()+rbPath); resp.StatusCode != http.StatusOK {
		t.Errorf("briefly delayed request = %d, want 200", resp.StatusCode)
	}
	waitFor(t, "both requests to be delayed", func() bool { return p.Stats().Faults.Delays == 2 })
	cancel()
	if err := <-delayed; err == nil {
		t.Error("the request delayed by an hour succeeded")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.requests() {
		if strings.Contains(r, "pods") {
			t.Errorf("backend got %q, which should still be delayed", r)
		}
	}
}

func TestBlackHoleHoldsRequestsAndStreams(t *testing.T) {
	lines := make(chan string)
	b := newBackend(t, map[string]http.HandlerFunc{podsPath: streamLines(lines)})
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)

	watch := bufio.NewReader(openStream(t, c, p.URL()+podsPath+"?watch=true").Body)
	lines <- "before"
	if got, err := watch.ReadString('\n'); err != nil || got != "before\n" {
		t.Fatalf("watch read %q, %v", got, err)
	}

	lift := p.BlackHole(Match{Resource: "pods"})
	listed := make(chan int, 1)
	go func() {
		resp, err := c.Get(p.URL() + podsPath)
		if err != nil {
			listed <- 0
			return
		}
		resp.Body.Close()
		listed <- resp.StatusCode
	}()
	lines <- "during"
	// Both the new list and the open watch's next line are now held.
	waitFor(t, "the list and the watch to be held", func() bool { return p.Stats().Faults.BlackHoled == 2 })
	if resp, _ := get(t, c, p.URL()+rbPath); resp.StatusCode != http.StatusOK {
		t.Errorf("request outside the black hole = %d, want 200", resp.StatusCode)
	}
	for _, r := range b.requests() {
		if r == "GET "+podsPath {
			t.Error("the held list reached the backend")
		}
	}

	lift()
	if code := <-listed; code != http.StatusOK {
		t.Errorf("held list after lift = %d, want 200", code)
	}
	if got, err := watch.ReadString('\n'); err != nil || got != "during\n" {
		t.Errorf("watch after lift read %q, %v; want the held line", got, err)
	}
}

func TestCutWatches(t *testing.T) {
	rbLines, podLines := make(chan string), make(chan string)
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: streamLines(rbLines), podsPath: streamLines(podLines)})
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)

	rb := bufio.NewReader(openStream(t, c, p.URL()+rbPath+"?watch=true").Body)
	pods := bufio.NewReader(openStream(t, c, p.URL()+podsPath+"?watch=1").Body)
	rbLines <- "rb"
	podLines <- "pod"
	_, _ = rb.ReadString('\n')
	_, _ = pods.ReadString('\n')

	if n := p.CutWatches(Match{Resource: "rolebindings"}); n != 1 {
		t.Errorf("CutWatches(rolebindings) = %d, want 1", n)
	}
	if _, err := io.ReadAll(rb); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut watch ended with %v, want an unexpected EOF", err)
	}
	podLines <- "still here"
	if got, err := pods.ReadString('\n'); err != nil || got != "still here\n" {
		t.Errorf("other watch read %q, %v; want it untouched", got, err)
	}
	if n := p.CutWatches(Match{}); n != 1 {
		t.Errorf("CutWatches(all) = %d, want 1: only the pods watch is left", n)
	}
	if got := p.Stats().Faults.WatchesCut; got != 2 {
		t.Errorf("Faults.WatchesCut = %d, want 2", got)
	}
}

// A watch cut once is not cut, nor counted, again by a second CutWatches
// that comes before its handler has returned.
func TestCutWatchesCountsEachWatchOnce(t *testing.T) {
	lines := make(chan string)
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: streamLines(lines)})
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)
	rb := bufio.NewReader(openStream(t, c, p.URL()+rbPath+"?watch=true").Body)
	lines <- "x"
	_, _ = rb.ReadString('\n')

	n1 := p.CutWatches(Match{})
	n2 := p.CutWatches(Match{})
	if n1 != 1 || n2 != 0 {
		t.Errorf("one open watch: CutWatches = %d, then %d; want 1, then 0", n1, n2)
	}
	if got := p.Stats().Faults.WatchesCut; got != 1 {
		t.Errorf("Faults.WatchesCut = %d, want 1", got)
	}
}

func TestCloseEndsRequestsInFlight(t *testing.T) {
	lines := make(chan string)
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: streamLines(lines)})
	p, err := New(&rest.Config{Host: b.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	watch := openStream(t, c, p.URL()+rbPath+"?watch=true")
	p.BlackHole(Match{Resource: "pods"})
	held := make(chan error, 1)
	go func() {
		resp, err := c.Get(p.URL() + podsPath)
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	waitFor(t, "the request to be held", func() bool { return p.Stats().Faults.BlackHoled == 1 })

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-held; err == nil {
		t.Error("held request succeeded after Close")
	}
	if _, err := io.ReadAll(watch.Body); err == nil {
		t.Error("open watch ended cleanly after Close, want a broken stream")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTLSUpstream(t *testing.T) {
	var gotAuth string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true // as the API server does
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	target := &rest.Config{
		Host:            srv.URL,
		BearerToken:     "t",
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             123,
		UserAgent:       "bench",
	}
	p := newProxy(t, target)

	cfg := p.ClientConfig()
	if cfg.Host != p.URL() || !strings.HasPrefix(cfg.Host, "http://127.0.0.1:") || cfg.BearerToken != "" || len(cfg.CAData) != 0 {
		t.Errorf("ClientConfig() = %+v, want plain HTTP to the proxy without credentials", cfg)
	}
	if cfg.QPS != 123 || cfg.UserAgent != "bench" {
		t.Errorf("ClientConfig() lost the target's QPS or user agent: %+v", cfg)
	}
	_, body := get(t, newClient(t), p.URL()+rbPath)
	if string(body) != "HTTP/2.0" || gotAuth != "Bearer t" {
		t.Errorf("upstream saw %s with Authorization %q, want HTTP/2.0 over TLS with the bearer token", body, gotAuth)
	}
}

func TestInjectRejectsBadRules(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	for _, r := range []Rule{
		{},
		{Fault: Fault{Kind: Gone}, Times: -1},
		{Fault: Fault{Kind: Disconnect, AfterBytes: -1}},
		{Fault: Fault{Kind: Delay, Delay: -time.Second}},
	} {
		if _, err := p.Inject(r); err == nil {
			t.Errorf("Inject(%+v) succeeded, want an error", r)
		}
	}
}

func TestNewRejectsBadTargets(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := New(&rest.Config{Host: "https://x", TLSClientConfig: rest.TLSClientConfig{CAFile: "/does/not/exist"}}); err == nil {
		t.Error("New with a missing CA file succeeded")
	}
}

// The API server answers a watch from a resourceVersion too old with 200
// and one ERROR event carrying a 410 Expired Status, then ends the stream
// (the watch cache's and etcd3's watchers both do, past admission): never
// with an HTTP 410. client-go's reflector takes another path for each (the
// open's error goes to the watch error handler; the event's does not), so
// Gone on a watch must come the server's way, in the encoding the client
// asked for.
func TestGoneOnWatchIsAnErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		accept      string
		wantType    string
	}{
		{"json", "application/json", "application/json", "application/json"},
		{"protobuf", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf;stream=watch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, nil)
			p := newProxy(t, &rest.Config{Host: b.URL})
			mustInject(t, p, Rule{Match: Match{Verbs: []Verb{Watch}}, Fault: Fault{Kind: Gone}, Times: 1})

			req, _ := http.NewRequest(http.MethodGet, p.URL()+"/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=1", nil)
			req.Header.Set("Accept", tc.accept)
			resp, err := newClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.wantType {
				t.Errorf("watch answered HTTP %d %q, want 200 %q with an ERROR event, as the API server", resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantType)
			}

			cfg := p.ClientConfig()
			cfg.ContentType, cfg.AcceptContentTypes = tc.contentType, tc.accept
			mustInject(t, p, Rule{Match: Match{Verbs: []Verb{Watch}}, Fault: Fault{Kind: Gone}, Times: 1})
			cs, err := kubernetes.NewForConfigAndClient(cfg, newClient(t))
			if err != nil {
				t.Fatal(err)
			}
			w, err := cs.CoreV1().ConfigMaps("ns").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatalf("Watch through the proxy: %v, want a watch that sends an ERROR event", err)
			}
			defer w.Stop()
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type != "ERROR" {
				t.Fatalf("first event %v %T (open %v), want ERROR", ev.Type, ev.Object, ok)
			}
			st, isStatus := ev.Object.(*metav1.Status)
			if err := apierrors.FromObject(ev.Object); !isStatus || !apierrors.IsResourceExpired(err) || st.Code != http.StatusGone {
				t.Errorf("ERROR event carries %#v, want a 410 Status of reason Expired", ev.Object)
			}
			if ev, ok := <-w.ResultChan(); ok {
				t.Errorf("after the ERROR event: %v, want the stream's end", ev)
			}
			if got := p.Stats().Faults.Gone; got != 2 {
				t.Errorf("Faults.Gone = %d, want 2", got)
			}
			if got := len(b.requests()); got != 0 {
				t.Errorf("backend got %d requests, want none: the watch never reaches it", got)
			}
		})
	}
}

// Disconnects counts responses the proxy cut: a body that ends within
// AfterBytes goes through whole, and nothing was cut.
func TestDisconnectCountsOnlyCuts(t *testing.T) {
	const body = "0123456789" // 10 bytes
	b := newBackend(t, map[string]http.HandlerFunc{rbPath: func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}})
	p := newProxy(t, &rest.Config{Host: b.URL})
	c := newClient(t)
	for _, after := range []int64{25, 10} {
		mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Disconnect, AfterBytes: after}, Times: 1})
		if _, got := get(t, c, p.URL()+rbPath); string(got) != body {
			t.Errorf("AfterBytes %d: body %q, want all of %q", after, got, body)
		}
	}
	if got := p.Stats().Faults.Disconnects; got != 0 {
		t.Errorf("Faults.Disconnects = %d after two whole bodies, want 0", got)
	}
	mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Disconnect, AfterBytes: 9}, Times: 1})
	resp, err := c.Get(p.URL() + rbPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(got) != body[:9] {
		t.Errorf("AfterBytes 9: body %q, error %v; want 9 bytes and a broken stream", got, err)
	}
	if got := p.Stats().Faults.Disconnects; got != 1 {
		t.Errorf("Faults.Disconnects = %d after one cut, want 1", got)
	}
}

// Garbled counts responses whose body the proxy replaced: when the API
// server cannot be reached there is no body to garble (the client gets the
// proxy's 502).
func TestGarbleCountsOnlyReplacedBodies(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	b.Close()
	mustInject(t, p, Rule{Match: Match{Resource: "rolebindings"}, Fault: Fault{Kind: Garble}, Times: 1})
	if resp, _ := get(t, newClient(t), p.URL()+rbPath); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want the proxy's 502", resp.StatusCode)
	}
	if got := p.Stats().Faults.Garbled; got != 0 {
		t.Errorf("Faults.Garbled = %d for a 502, want 0", got)
	}
}
