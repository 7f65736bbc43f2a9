package faultproxy

import (
	"net/http"
	"strconv"
	"strings"
)

// Verb is the Kubernetes API verb of a request, as in RBAC rules.
type Verb string

// The verbs the proxy tells apart.
const (
	List             Verb = "list"
	Watch            Verb = "watch"
	Get              Verb = "get"
	Create           Verb = "create"
	Update           Verb = "update"
	Patch            Verb = "patch"
	Delete           Verb = "delete"
	DeleteCollection Verb = "deletecollection"
	// NonResource is any request outside /api and /apis (discovery of
	// /version, /healthz, ...) or with a method the API server does not use.
	NonResource Verb = "nonresource"
)

// requestInfo is what the proxy needs to know about a request to match
// rules and count it.
type requestInfo struct {
	verb     Verb
	resource string
	// limited: a list that asks for a page (limit > 0).
	limited bool
	// continued: a list that carries a continue token.
	continued bool
	// streaming: a watch with sendInitialEvents=true.
	streaming bool
}

// parseRequest reads the verb and resource from a Kubernetes API path:
// /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]] or
// the same under /apis/{group}/{version}.
func parseRequest(r *http.Request) requestInfo {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return requestInfo{verb: NonResource}
	}
	legacyWatch := len(rest) > 0 && rest[0] == "watch"
	if legacyWatch {
		rest = rest[1:]
	}
	// namespaces/{ns}/{resource}... is a namespaced resource; namespaces and
	// namespaces/{name} are the namespaces resource itself.
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) == 0 || rest[0] == "" {
		return requestInfo{verb: NonResource}
	}
	info := requestInfo{resource: rest[0]}
	named := len(rest) > 1
	q := r.URL.Query()

	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case legacyWatch || queryBool(q.Get("watch")):
			info.verb = Watch
			info.streaming = queryBool(q.Get("sendInitialEvents"))
		case named:
			info.verb = Get
		default:
			info.verb = List
			limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
			info.limited = limit > 0
			info.continued = q.Get("continue") != ""
		}
	case http.MethodPost:
		info.verb = Create
	case http.MethodPut:
		info.verb = Update
	case http.MethodPatch:
		info.verb = Patch
	case http.MethodDelete:
		if named {
			info.verb = Delete
		} else {
			info.verb = DeleteCollection
		}
	default:
		info.verb = NonResource
	}
	return info
}

func queryBool(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b
}

// HasContinue reports whether r carries a LIST continue token: a predicate
// for Match.
func HasContinue(r *http.Request) bool { return r.URL.Query().Get("continue") != "" }

// IsStreamingList reports whether r is a watch with sendInitialEvents=true,
// a streaming list: a predicate for Match.
func IsStreamingList(r *http.Request) bool { return parseRequest(r).streaming }
