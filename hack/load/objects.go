package main

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The load objects: ConfigMaps in loadNamespaces namespaces, labelled so that
// a later run against the same cluster finds them.
const (
	loadLabel      = "app.kubernetes.io/managed-by"
	loadLabelValue = "leaninformer-load"
	loadNamespaces = 10
	nsPrefix       = "leaninformer-load-"
	// writtenAtAnnotation carries the write's time (Unix nanoseconds, the
	// writer's clock) in every update, so that a handler measures the time
	// from the write to its call.
	writtenAtAnnotation = "leaninformer.io/written-at"
)

func nsName(i int) string { return nsPrefix + fmt.Sprintf("%02d", i%loadNamespaces) }

func cmName(i int) string { return fmt.Sprintf("load-%07d", i) }

// configMap is the i-th load object: an application's settings, about the
// size of hack/bench's ConfigMaps (1 KiB encoded).
func configMap(i int) *corev1.ConfigMap {
	app := fmt.Sprintf("app-%04d", i%500)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      cmName(i),
			Namespace: nsName(i),
			Labels: map[string]string{
				loadLabel:                     loadLabelValue,
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/component": "config",
			},
		},
		Data: map[string]string{
			"LOG_LEVEL": []string{"info", "debug", "warn"}[i%3],
			"HTTP_PORT": "8080",
			"application.yaml": fmt.Sprintf("server:\n  port: 8080\n  name: %s\ndatabase:\n  host: postgres.%s.svc.cluster.local\n  name: db_%07d\n  pool: %d\nlogging:\n  level: info\n",
				app, nsName(i), i, 5+i%20),
		},
	}
}

// isLoad reports whether obj is one of the load objects.
func isLoad(obj any) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetLabels()[loadLabel] == loadLabelValue
}

// stamp returns the annotation value for a write at t.
func stamp(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// writtenAt returns the write time an object carries, if any.
func writtenAt(obj any) (time.Time, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(m.GetAnnotations()[writtenAtAnnotation], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}
