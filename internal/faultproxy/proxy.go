// Package faultproxy is a loopback HTTP proxy that sits between a Kubernetes
// client and an API server and injects faults on command: it cuts open
// watches, answers chosen requests with 410 Gone (on a watch, as the API
// server does, an ERROR event carrying the 410), 429 or 500, drops a
// response after some bytes, replaces a response's body with bytes no client
// decodes, expires continue tokens, delays requests and black-holes traffic.
// It counts requests by kind (lists with limit or continue, watches,
// streaming-list watches) so that tests and benchmarks can assert what a
// client really sent.
//
// The proxy serves plain HTTP on 127.0.0.1 and talks to the API server with
// the credentials of the rest.Config it was made from; ClientConfig returns
// the config a client uses to go through it. Responses are streamed: every
// chunk read from the API server is written and flushed at once. Upgraded
// connections (exec, port-forward) are not supported.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

var (
	errCut    = errors.New("faultproxy: watch cut")
	errClosed = errors.New("faultproxy: proxy closed")
)

// Proxy is a running fault-injecting proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	target    *rest.Config
	upstream  *url.URL
	transport *http.Transport
	rt        http.RoundTripper

	ln        net.Listener
	srv       *http.Server
	serveDone chan struct{}
	// ctx ends when the proxy closes; every request's context follows it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	rules  []*Injection
	holes  []*blackHole
	// holesChanged is closed (and replaced) whenever a black hole is lifted,
	// waking the requests it held.
	holesChanged chan struct{}
	// watches are the open watches not cut yet: a cut one leaves at once,
	// not when its handler returns, so that no CutWatches cuts it twice.
	watches  map[*openWatch]struct{}
	inflight sync.WaitGroup

	stats counters
}

type blackHole struct{ match Match }

type openWatch struct {
	req    *http.Request
	info   RequestInfo
	cancel context.CancelCauseFunc
}

// New starts a proxy on 127.0.0.1 in front of the API server target
// describes, using target's TLS settings and credentials upstream.
func New(target *rest.Config) (*Proxy, error) {
	if target == nil {
		return nil, errors.New("faultproxy: target rest.Config is nil")
	}
	upstream, _, err := rest.DefaultServerUrlFor(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target host %q: %w", target.Host, err)
	}
	tlsConfig, err := rest.TLSConfigFor(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: TLS config for %s: %w", target.Host, err)
	}
	// A transport of our own, not client-go's shared cached one, so Close
	// can close its connections.
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 32,
	}
	rt, err := rest.HTTPWrappersForConfig(target, transport)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: credentials for %s: %w", target.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:       rest.CopyConfig(target),
		upstream:     upstream,
		transport:    transport,
		rt:           rt,
		ln:           ln,
		serveDone:    make(chan struct{}),
		ctx:          ctx,
		cancel:       cancel,
		holesChanged: make(chan struct{}),
		watches:      map[*openWatch]struct{}{},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(p.serveDone)
		_ = p.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return p, nil
}

// URL is the proxy's address, http://127.0.0.1:port.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// ClientConfig returns a config that reaches the API server through the
// proxy: plain HTTP to the proxy, no credentials of its own (the proxy adds
// the target's), and the target's content type, user agent, QPS and timeout.
func (p *Proxy) ClientConfig() *rest.Config {
	return &rest.Config{
		Host:          p.URL(),
		APIPath:       p.target.APIPath,
		ContentConfig: p.target.ContentConfig,
		UserAgent:     p.target.UserAgent,
		QPS:           p.target.QPS,
		Burst:         p.target.Burst,
		Timeout:       p.target.Timeout,
	}
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats { return p.stats.snapshot() }

// Inject puts a rule in force. Rules are tried in the order they were
// injected; a request gets the fault of the first rule that matches it.
// Match predicates run under the proxy's lock: keep them quick.
func (p *Proxy) Inject(r Rule) (*Injection, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	in := &Injection{p: p, rule: r}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, in)
	return in, nil
}

// ExpireContinueTokens answers the next times LIST requests for resource
// ("" for any) that carry a continue token with 410 Expired, as the API
// server does once a token's resourceVersion is compacted; 0 means every
// such request until the Injection is removed.
func (p *Proxy) ExpireContinueTokens(resource string, times int) (*Injection, error) {
	return p.Inject(Rule{
		Match: Match{Verbs: []Verb{List}, Resource: resource, Predicate: HasContinue},
		Fault: Fault{Kind: Gone},
		Times: times,
	})
}

// CutWatches drops the connections of the open watches m matches (m's Verbs
// are ignored: every open request it is tried on is a watch) and returns how
// many it cut; a watch it cut before is neither cut nor counted again. The
// clients see their watch streams end abruptly.
func (p *Proxy) CutWatches(m Match) int {
	m.Verbs = nil
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for w := range p.watches {
		if m.matches(w.req, w.info) {
			w.cancel(errCut)
			delete(p.watches, w)
			n++
		}
	}
	p.stats.watchesCut.Add(int64(n))
	return n
}

// BlackHole holds the requests m matches until lift is called: new ones are
// accepted but not forwarded, and open responses (watches, lists being
// sent) stop delivering bytes. Lifting lets them all go on, like a network
// partition that heals before TCP gives up; clients with their own timeouts
// give up earlier. Close ends held requests.
func (p *Proxy) BlackHole(m Match) (lift func()) {
	h := &blackHole{match: m}
	p.mu.Lock()
	p.holes = append(p.holes, h)
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.holes = slices.DeleteFunc(p.holes, func(x *blackHole) bool { return x == h })
		close(p.holesChanged)
		p.holesChanged = make(chan struct{})
	})
}

// Close stops the proxy: it ends every request in flight (held, delayed and
// streaming ones included), waits for them and closes its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()

	p.cancel()
	err := p.srv.Close()
	<-p.serveDone
	p.inflight.Wait()
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("faultproxy: close server: %w", err)
	}
	return nil
}

// ServeHTTP forwards one request, applying the black holes and the first
// matching rule.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		panic(http.ErrAbortHandler)
	}
	defer p.inflight.Done()

	info := ParseRequest(r)
	p.stats.countRequest(info)

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	defer context.AfterFunc(p.ctx, func() { cancel(errClosed) })()
	if info.Verb == Watch {
		defer p.trackWatch(r, info, cancel)()
	}

	if err := p.waitWhileHeld(ctx, r, info); err != nil {
		panic(http.ErrAbortHandler)
	}
	body := response{limit: -1}
	if fault, ok := p.take(r, info); ok {
		// Disconnect and Garble are counted by forward, when they happen.
		if fault.Kind != Disconnect && fault.Kind != Garble {
			p.stats.faults[fault.Kind].Add(1)
		}
		switch fault.Kind {
		case Gone, TooManyRequests, InternalError:
			if fault.Kind == Gone && info.Verb == Watch {
				st, _ := faultStatus(fault, info)
				writeWatchError(w, r, st)
				return
			}
			writeStatus(w, fault, info)
			return
		case Delay:
			if err := sleep(ctx, fault.Delay); err != nil {
				panic(http.ErrAbortHandler)
			}
		case Disconnect:
			body.limit = fault.AfterBytes
		case Garble:
			body.garble = true
		}
	}
	p.forward(ctx, w, r, info, body)
}

// response says what forward does to a response body: cut it after limit
// bytes (negative: never), or replace it with garbledBody.
type response struct {
	limit  int64
	garble bool
}

// enter registers a request in flight, or refuses it once Close has begun.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

func (p *Proxy) trackWatch(r *http.Request, info RequestInfo, cancel context.CancelCauseFunc) (untrack func()) {
	w := &openWatch{req: r, info: info, cancel: cancel}
	p.mu.Lock()
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.watches, w)
		p.mu.Unlock()
	}
}

// take returns the fault of the first rule matching the request and uses up
// one of the rule's Times.
func (p *Proxy) take(r *http.Request, info RequestInfo) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.rules {
		if !in.rule.Match.matches(r, info) {
			continue
		}
		in.hits++
		if in.rule.Times > 0 && in.hits >= in.rule.Times {
			in.removeLocked()
		}
		return in.rule.Fault, true
	}
	return Fault{}, false
}

// waitWhileHeld blocks while a black hole matches the request; it returns
// the cause when ctx ends first.
func (p *Proxy) waitWhileHeld(ctx context.Context, r *http.Request, info RequestInfo) error {
	counted := false
	for {
		p.mu.Lock()
		held := slices.ContainsFunc(p.holes, func(h *blackHole) bool { return h.match.matches(r, info) })
		changed := p.holesChanged
		p.mu.Unlock()
		if !held {
			return nil
		}
		if !counted {
			p.stats.blackHoled.Add(1)
			counted = true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// forward sends the request upstream and streams the response back, flushing
// every chunk. With limit >= 0 it drops the connection once limit bytes of
// body have gone through and more follow (a body that ends within the limit
// goes through whole, and no cut is counted). When ctx ends (a cut, Close) or the upstream body
// fails, the client's connection is dropped so that it sees a broken stream,
// not a clean end.
func (p *Proxy) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, info RequestInfo, body response) {
	out := r.Clone(ctx)
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.URL.Path = joinPath(p.upstream.Path, r.URL.Path)
	out.URL.RawPath = ""
	out.Host, out.RequestURI = "", ""
	if r.ContentLength == 0 {
		out.Body = nil
	}
	removeHopHeaders(out.Header)

	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		if ctx.Err() != nil {
			panic(http.ErrAbortHandler)
		}
		writeJSONStatus(w, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure,
			Code:     http.StatusBadGateway,
			Reason:   metav1.StatusReasonServiceUnavailable,
			Message:  fmt.Sprintf("faultproxy: %s %s upstream: %v", r.Method, r.URL.Path, err),
		})
		return
	}
	defer resp.Body.Close()

	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	removeHopHeaders(w.Header())
	if body.garble {
		p.stats.faults[Garble].Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(garbledBody)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(garbledBody)
		return
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	limit := body.limit

	buf := make([]byte, 32<<10)
	var sent int64
	for {
		n, readErr := resp.Body.Read(buf)
		if n > 0 {
			if p.waitWhileHeld(ctx, r, info) != nil {
				panic(http.ErrAbortHandler)
			}
			chunk := buf[:n]
			cut := limit >= 0 && sent+int64(n) > limit
			if cut {
				chunk = chunk[:limit-sent]
			}
			if _, err := w.Write(chunk); err != nil {
				return // the client went away
			}
			if rc.Flush() != nil {
				return
			}
			sent += int64(len(chunk))
			if cut {
				p.stats.faults[Disconnect].Add(1)
				panic(http.ErrAbortHandler)
			}
		}
		switch {
		case readErr == io.EOF:
			return
		case readErr != nil:
			panic(http.ErrAbortHandler)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func joinPath(prefix, p string) string {
	if prefix == "" || prefix == "/" {
		return p
	}
	joined := path.Join(prefix, p)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(joined, "/") {
		joined += "/"
	}
	return joined
}

// hopHeaders are meaningful for one connection only and must not be
// forwarded (RFC 9110, section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}
