package faultproxy

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
)

// writeWatchError answers a watch the way the API server ends one it has
// accepted but cannot serve, such as one from a resourceVersion older than
// its history: 200, one ERROR event carrying st, and the end of the stream.
// The event is encoded as the client asked in its Accept header, protobuf
// or JSON (the default), with the framing and Content-Type of a watch.
func writeWatchError(w http.ResponseWriter, r *http.Request, st *metav1.Status) {
	gv := requestGroupVersion(r.URL.Path)
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, gv)
	codecs := serializer.NewCodecFactory(scheme)
	info := watchSerializer(codecs, r.Header.Get("Accept"))

	object, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, gv), st)
	if err != nil {
		// A Status always encodes; this would be a programming error.
		panic(fmt.Sprintf("faultproxy: encode Status: %v", err))
	}
	contentType := info.MediaType
	if contentType != runtime.ContentTypeJSON {
		contentType += ";stream=watch"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	// The API server sends the headers first, then the events, chunked.
	_ = http.NewResponseController(w).Flush()
	enc := streaming.NewEncoder(info.StreamSerializer.NewFrameWriter(w), codecs.EncoderForVersion(info.StreamSerializer.Serializer, gv))
	_ = enc.Encode(&metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: object}})
}

// watchSerializer picks the serializer of the first media type in accept
// that the API server streams watches in by default, protobuf or JSON
// ("*/*" and "application/*" mean JSON); JSON when there is none.
func watchSerializer(codecs serializer.CodecFactory, accept string) runtime.SerializerInfo {
	want := runtime.ContentTypeJSON
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == runtime.ContentTypeProtobuf {
			want = mt
			break
		}
		if mt == runtime.ContentTypeJSON || mt == "*/*" || mt == "application/*" {
			break
		}
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), want)
	if !ok || info.StreamSerializer == nil {
		panic(fmt.Sprintf("faultproxy: no stream serializer for %s", want))
	}
	return info
}

// requestGroupVersion returns the group and version of an API path,
// /api/{version}/... or /apis/{group}/{version}/...; v1 for any other.
func requestGroupVersion(path string) schema.GroupVersion {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		return schema.GroupVersion{Version: parts[1]}
	case len(parts) >= 3 && parts[0] == "apis":
		return schema.GroupVersion{Group: parts[1], Version: parts[2]}
	}
	return schema.GroupVersion{Version: "v1"}
}
