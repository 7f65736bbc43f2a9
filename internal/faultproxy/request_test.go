package faultproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           requestInfo
	}{
		{"GET", "/api/v1/pods", requestInfo{verb: List, resource: "pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?limit=10", requestInfo{verb: List, resource: "pods", limited: true}},
		{"GET", "/api/v1/namespaces/ns/pods?limit=0&continue=x", requestInfo{verb: List, resource: "pods", continued: true}},
		{"GET", "/api/v1/namespaces", requestInfo{verb: List, resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns", requestInfo{verb: Get, resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", requestInfo{verb: Get, resource: "pods"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=true", requestInfo{verb: Watch, resource: "rolebindings"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=1&sendInitialEvents=true", requestInfo{verb: Watch, resource: "rolebindings", streaming: true}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=false&limit=5", requestInfo{verb: List, resource: "rolebindings", limited: true}},
		{"GET", "/apis/apps/v1/watch/namespaces/ns/deployments", requestInfo{verb: Watch, resource: "deployments"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", requestInfo{verb: Create, resource: "deployments"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d", requestInfo{verb: Update, resource: "deployments"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", requestInfo{verb: Patch, resource: "deployments"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", requestInfo{verb: Delete, resource: "deployments"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", requestInfo{verb: DeleteCollection, resource: "deployments"}},
		{"GET", "/version", requestInfo{verb: NonResource}},
		{"GET", "/apis/apps/v1", requestInfo{verb: NonResource}},
		{"GET", "/api", requestInfo{verb: NonResource}},
		{"OPTIONS", "/api/v1/pods", requestInfo{verb: NonResource, resource: "pods"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := parseRequest(r); got != tc.want {
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
