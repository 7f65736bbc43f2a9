// Package fake is an in-memory API server for one resource, for tests and
// benchmarks of code that lists and watches through a client-go
// ListerWatcher.
//
// A Server stores objects of the item type of the list it is given (for
// instance &corev1.ConfigMapList{} stores *corev1.ConfigMap) under real,
// increasing resourceVersions, keeps a multi-version history until Compact,
// and answers LIST and WATCH the way a kube-apiserver does:
//
//   - LIST and WATCH apply labelSelector (labels.Parse syntax) and
//     fieldSelector on metadata.name and metadata.namespace, the fields every
//     resource indexes, and on those WithFieldSet adds (spec.nodeName of
//     Pods, for instance); a selector that does not parse, or a field
//     selector on any other field, answers 400 BadRequest with the API
//     server's message. A watch sees a change
//     through its selectors: an object that starts matching comes as ADDED,
//     one that stops matching as DELETED with its last matching state at the
//     change's resourceVersion. Shard selectors are recorded, not applied.
//   - LIST pages with limit and opaque continue tokens read a consistent
//     snapshot at the first page's resourceVersion; a page costs O(page), so
//     100,000 objects stay fast. With a selector a page holds up to limit
//     selected objects and is followed by others while any object remains
//     after it, selected or not, so the last page may be empty. A page that
//     others follow says how many objects remain (remainingItemCount),
//     except when the request has a label or field selector. resourceVersion="0" ignores the limit (the
//     watch cache does), an unknown future resourceVersion answers "Too large
//     resource version", and a resourceVersionMatch or resourceVersion sent
//     together with continue is rejected.
//   - WATCH from a resourceVersion replays the history after it; from "" or
//     "0" it first sends synthetic ADDED events of the current state
//     (with sendInitialEvents=false, none: only the changes after the
//     newest resourceVersion).
//     sendInitialEvents=true streams the state and, when bookmarks are
//     allowed, ends it with the BOOKMARK annotated
//     k8s.io/initial-events-end: "true" (without bookmarks the real server
//     sends the state but never the end bookmark; so does this one). A
//     watch from a resourceVersion newer than the server's stays open and
//     sends only the changes (and bookmarks) after it, as the watch cache
//     does; only with sendInitialEvents=true does it end with a "Too large
//     resource version" ERROR, at once where the real server first waits
//     a few seconds for the resourceVersion. A watch with timeoutSeconds
//     ends after it by closing its result channel, with no ERROR event;
//     unset or 0 is, as on the real server, its --min-request-timeout
//     (WithMinRequestTimeout, 1800 s by default) times a random factor in
//     [1, 2): 30 to 60 minutes.
//   - A watch with allowWatchBookmarks gets a BOOKMARK at the newest
//     resourceVersion every minute and 2 s before its timeout, as the watch
//     cache sends them, when that is newer than the resourceVersion the
//     watch started from; selectors do not filter bookmarks, so they carry
//     a selective watch past the changes it did not select.
//     WithBookmarkFrequency sets the period (0: none; the real server sends
//     them within about a second of it, the fake on time).
//   - Compact makes older resourceVersions and continue tokens answer
//     410 Expired, as an error for LIST and as an ERROR event for WATCH.
//     The 410 for a continue token carries, in its Status's
//     metadata.continue, a token that lists the rest at the newest
//     resourceVersion (an inconsistent list), as etcd3's store does.
//
// Faults are injected per request with SetFault, and on open watches with
// CloseWatches, SendWatchError, SendBookmark and SendWatchEvent. Every
// request is logged (Requests) for assertions.
//
// Objects handed out are deep copies, as a client decoding a response would
// get; objects handed in are copied too, so callers may reuse them.
package fake
