package faultproxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"k8s.io/client-go/rest"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
)

// A proxy in front of an API server (here a stand-in) answers the next watch
// of rolebindings with 410 Gone, then lets the following one through. As
// the API server, it answers a watch's 410 with 200 and an ERROR event.
func Example() {
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer apiserver.Close()

	p, err := faultproxy.New(&rest.Config{Host: apiserver.URL})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	if _, err := p.Inject(faultproxy.Rule{
		Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}, Resource: "rolebindings"},
		Fault: faultproxy.Fault{Kind: faultproxy.Gone},
		Times: 1,
	}); err != nil {
		panic(err)
	}

	// A client would use p.ClientConfig(); plain HTTP shows the answers.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for range 2 {
		resp, err := client.Get(p.URL() + "/apis/rbac.authorization.k8s.io/v1/rolebindings?watch=true")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, string(body))
	}
	s := p.Stats()
	fmt.Println("watches:", s.Requests.Watches, "410s:", s.Faults.Gone)
	// Output:
	// 200 OK {"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"faultproxy: the resource version has expired (injected)","reason":"Expired","code":410}}
	//
	// 200 OK {}
	// watches: 2 410s: 1
}
