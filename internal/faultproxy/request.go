package faultproxy

import (
	"net/http"
	"net/url"
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

// RequestInfo is what the proxy reads from a request to match rules and
// count it.
type RequestInfo struct {
	Verb Verb
	// Resource is the plural resource name; empty for NonResource requests.
	Resource string
	// Subresource is what follows the object's name in the path ("status",
	// "log", "scale", ...); empty for the resource itself.
	Subresource string
	// Limited: a list that asks for a page (limit > 0).
	Limited bool
	// Continued: a list that carries a continue token.
	Continued bool
	// Streaming: a watch with sendInitialEvents=true, a streaming list.
	Streaming bool
}

// ParseRequest reads the verb, resource and subresource from a Kubernetes
// API path, /api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}]]
// or the same under /apis/{group}/{version}, and the list and watch
// parameters from its query, as the API server's request-info resolver
// (k8s.io/apiserver/pkg/endpoints/request) does. As there,
// /namespaces/{name}/status and /namespaces/{name}/finalize are
// subresources of the namespaces resource, not a resource in namespace
// {name}; the watch parameter makes a watch of a GET of a collection only
// (a GET of one object with ?watch=true is a get, and the API server
// answers it with the object); and a bool parameter (watch,
// sendInitialEvents) is true when present unless its value is "0" or
// "false" ("?watch" is a watch).
func ParseRequest(r *http.Request) RequestInfo {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return RequestInfo{Verb: NonResource}
	}
	legacyWatch := len(rest) > 0 && rest[0] == "watch"
	if legacyWatch {
		rest = rest[1:]
	}
	// namespaces/{ns}/{resource}... is a namespaced resource; namespaces,
	// namespaces/{name} and its subresources are the namespaces resource
	// itself.
	if len(rest) >= 3 && rest[0] == "namespaces" && !namespaceSubresources[rest[2]] {
		rest = rest[2:]
	}
	if len(rest) == 0 || rest[0] == "" {
		return RequestInfo{Verb: NonResource}
	}
	info := RequestInfo{Resource: rest[0]}
	named := len(rest) > 1
	if len(rest) > 2 {
		info.Subresource = rest[2]
	}
	q := r.URL.Query()

	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		// The watch parameter counts on a collection only: a GET of one
		// object is a get whatever its query says (the API server's route
		// serves the object), and only the legacy /watch/ prefix watches one.
		case legacyWatch || !named && queryBool(q, "watch"):
			info.Verb = Watch
			info.Streaming = queryBool(q, "sendInitialEvents")
		case named:
			info.Verb = Get
		default:
			info.Verb = List
			limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
			info.Limited = limit > 0
			info.Continued = q.Get("continue") != ""
		}
	case http.MethodPost:
		info.Verb = Create
	case http.MethodPut:
		info.Verb = Update
	case http.MethodPatch:
		info.Verb = Patch
	case http.MethodDelete:
		if named {
			info.Verb = Delete
		} else {
			info.Verb = DeleteCollection
		}
	default:
		info.Verb = NonResource
	}
	return info
}

// namespaceSubresources are the subresources of a namespace, as in the API
// server's RequestInfoFactory (k8s.io/apiserver/pkg/endpoints/request).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// queryBool reads a bool query parameter as the API server decodes it
// (k8s.io/apimachinery runtime.Convert_Slice_string_To_bool): false when
// absent or when its first value is "0" or "false" in any case, true
// otherwise, an empty value ("?watch") included.
func queryBool(q url.Values, name string) bool {
	vs := q[name]
	if len(vs) == 0 {
		return false
	}
	return vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}

// HasContinue reports whether r carries a LIST continue token: a predicate
// for Match.
func HasContinue(r *http.Request) bool { return r.URL.Query().Get("continue") != "" }

// IsStreamingList reports whether r is a watch with sendInitialEvents=true
// (or any value the API server reads as true), a streaming list: a
// predicate for Match.
func IsStreamingList(r *http.Request) bool { return ParseRequest(r).Streaming }
