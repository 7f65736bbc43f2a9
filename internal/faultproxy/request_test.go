package faultproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           RequestInfo
	}{
		{"GET", "/api/v1/pods", RequestInfo{Verb: List, Resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?limit=10", RequestInfo{Verb: List, Resource: "pods", Limited: true}},
		{"GET", "/api/v1/namespaces/ns/pods?limit=0&continue=x", RequestInfo{Verb: List, Resource: "pods", Continued: true}},
		{"GET", "/api/v1/namespaces", RequestInfo{Verb: List, Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns", RequestInfo{Verb: Get, Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", RequestInfo{Verb: Get, Resource: "pods", Subresource: "log"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=true", RequestInfo{Verb: Watch, Resource: "rolebindings"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=1&sendInitialEvents=true", RequestInfo{Verb: Watch, Resource: "rolebindings", Streaming: true}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=false&limit=5", RequestInfo{Verb: List, Resource: "rolebindings", Limited: true}},
		{"GET", "/apis/apps/v1/watch/namespaces/ns/deployments", RequestInfo{Verb: Watch, Resource: "deployments"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", RequestInfo{Verb: Create, Resource: "deployments"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d", RequestInfo{Verb: Update, Resource: "deployments"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", RequestInfo{Verb: Patch, Resource: "deployments", Subresource: "status"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", RequestInfo{Verb: Delete, Resource: "deployments"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", RequestInfo{Verb: DeleteCollection, Resource: "deployments"}},
		{"GET", "/version", RequestInfo{Verb: NonResource}},
		{"GET", "/apis/apps/v1", RequestInfo{Verb: NonResource}},
		{"GET", "/api", RequestInfo{Verb: NonResource}},
		{"OPTIONS", "/api/v1/pods", RequestInfo{Verb: NonResource, Resource: "pods"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := ParseRequest(r); got != tc.want {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods?limit=1&continue=abc", nil)
	if !HasContinue(r) || IsStreamingList(r) {
		t.Errorf("list with continue: HasContinue=%v IsStreamingList=%v", HasContinue(r), IsStreamingList(r))
	}
	r = httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true&sendInitialEvents=true", nil)
	if HasContinue(r) || !IsStreamingList(r) {
		t.Errorf("streaming watch: HasContinue=%v IsStreamingList=%v", HasContinue(r), IsStreamingList(r))
	}
}

func TestRequestCounterCountsLikeTheProxy(t *testing.T) {
	b := newBackend(t, nil)
	p := newProxy(t, &rest.Config{Host: b.URL})
	var rc RequestCounter
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: rc.Wrap(tr)}
	for _, path := range []string{rbPath + "?limit=1", rbPath + "?limit=1&continue=x", rbPath + "?watch=true&sendInitialEvents=true", "/version"} {
		get(t, c, p.URL()+path)
	}
	want := RequestCounts{Lists: 2, ListsWithLimit: 2, ListsWithContinue: 1, Watches: 1, StreamingWatches: 1, Other: 1}
	if got := rc.Counts(); got != want {
		t.Errorf("RequestCounter.Counts() = %+v, want %+v", got, want)
	}
	if got := p.Stats().Requests; got != rc.Counts() {
		t.Errorf("proxy counted %+v, client %+v", got, rc.Counts())
	}
}

// A namespace's status and finalize subresources are the namespaces
// resource, as the API server's RequestInfoFactory reads them
// (namespaceSubresources), not a collection in namespace {name}.
func TestParseRequestNamespaceSubresources(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           RequestInfo
	}{
		{"GET", "/api/v1/namespaces/foo/status", RequestInfo{Verb: Get, Resource: "namespaces", Subresource: "status"}},
		{"PUT", "/api/v1/namespaces/foo/status", RequestInfo{Verb: Update, Resource: "namespaces", Subresource: "status"}},
		{"PUT", "/api/v1/namespaces/foo/finalize", RequestInfo{Verb: Update, Resource: "namespaces", Subresource: "finalize"}},
		{"PATCH", "/api/v1/namespaces/foo/status", RequestInfo{Verb: Patch, Resource: "namespaces", Subresource: "status"}},
		// Any other word after the name is a resource in that namespace.
		{"GET", "/api/v1/namespaces/foo/configmaps", RequestInfo{Verb: List, Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/foo/statuses", RequestInfo{Verb: List, Resource: "statuses"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := ParseRequest(r); got != tc.want {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

// Bool query parameters read as the API server decodes them
// (runtime.Convert_Slice_string_To_bool): absent is false, "0" and "false"
// in any case are false, any other value, empty included, is true.
func TestParseRequestBoolQueryLikeAPIServer(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  RequestInfo
	}{
		{"?watch", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=yes", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=on", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=TRUE", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=0", RequestInfo{Verb: List, Resource: "pods"}},
		{"?watch=false", RequestInfo{Verb: List, Resource: "pods"}},
		{"?watch=FaLsE", RequestInfo{Verb: List, Resource: "pods"}},
		{"?watch=false&watch=true", RequestInfo{Verb: List, Resource: "pods"}}, // the first value counts
		{"?watch=1&sendInitialEvents", RequestInfo{Verb: Watch, Resource: "pods", Streaming: true}},
		{"?watch=1&sendInitialEvents=y", RequestInfo{Verb: Watch, Resource: "pods", Streaming: true}},
		{"?watch=1&sendInitialEvents=False", RequestInfo{Verb: Watch, Resource: "pods"}},
		{"?watch=1&sendInitialEvents=0", RequestInfo{Verb: Watch, Resource: "pods"}},
	} {
		target := "/api/v1/namespaces/ns/pods" + tc.query
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if got := ParseRequest(r); got != tc.want {
			t.Errorf("GET %s: got %+v, want %+v", target, got, tc.want)
		}
	}
}

// A GET of one object is a get, whatever its query says: the API server's
// request-info resolver (k8s.io/apiserver/pkg/endpoints/request) reads the
// watch parameter only for a request without a name, and the route serves
// the object itself. Only the legacy /watch/ prefix watches one object. The
// part after the name is the subresource.
func TestParseRequestNamedObjects(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           RequestInfo
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cm?watch=true", RequestInfo{Verb: Get, Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns/configmaps/cm?watch", RequestInfo{Verb: Get, Resource: "configmaps"}},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/status?watch=1", RequestInfo{Verb: Get, Resource: "deployments", Subresource: "status"}},
		{"GET", "/api/v1/namespaces/ns?watch=true", RequestInfo{Verb: Get, Resource: "namespaces"}},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps/cm", RequestInfo{Verb: Watch, Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", RequestInfo{Verb: Get, Resource: "pods", Subresource: "log"}},
		{"PUT", "/api/v1/namespaces/foo/finalize", RequestInfo{Verb: Update, Resource: "namespaces", Subresource: "finalize"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", RequestInfo{Verb: Patch, Resource: "deployments", Subresource: "scale"}},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", RequestInfo{Verb: Watch, Resource: "configmaps"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := ParseRequest(r); got != tc.want {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}
