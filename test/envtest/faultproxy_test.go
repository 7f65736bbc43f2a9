package envtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaninformer/leaninformer/internal/faultproxy"
)

// The suites trust internal/faultproxy to fail requests the way the API
// server does; these specs hold its faults against the server's answers.
var _ = Describe("the fault proxy next to the API server", func() {
	// watchAnswer is what a client sees of a watch's answer.
	type watchAnswer struct {
		HTTPStatus  int
		ContentType string
		OpenErr     bool
		Events      []watch.EventType
		Code        int32
		Reason      metav1.StatusReason
	}
	// answer watches podtemplates in ns from rv, raw and with client-go.
	answer := func(ctx context.Context, c *rest.Config, ns, rv, accept string) watchAnswer {
		GinkgoHelper()
		var a watchAnswer
		httpClient, err := rest.HTTPClientFor(c)
		Expect(err).NotTo(HaveOccurred())
		host, _, err := rest.DefaultServerUrlFor(c)
		Expect(err).NotTo(HaveOccurred())
		u := host.JoinPath("/api/v1/namespaces", ns, "podtemplates")
		u.RawQuery = url.Values{"watch": {"true"}, "resourceVersion": {rv}}.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", accept)
		resp, err := httpClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		a.HTTPStatus, a.ContentType = resp.StatusCode, resp.Header.Get("Content-Type")

		c = rest.CopyConfig(c)
		c.AcceptContentTypes = accept
		cs, err := kubernetes.NewForConfig(c)
		Expect(err).NotTo(HaveOccurred())
		w, err := cs.CoreV1().PodTemplates(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			a.OpenErr = true
			if st, ok := err.(apierrors.APIStatus); ok {
				a.Code, a.Reason = st.Status().Code, st.Status().Reason
			}
			return a
		}
		defer w.Stop()
		// The deadline only turns a watch that stays open into a failure.
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return a
				}
				a.Events = append(a.Events, ev.Type)
				if st, ok := ev.Object.(*metav1.Status); ok {
					a.Code, a.Reason = st.Code, st.Reason
				}
			case <-timeout:
				a.Events = append(a.Events, "(still open after 30 s)")
				return a
			}
		}
	}

	It("answers Gone on a watch as the API server answers a watch from a resourceVersion older than its watch cache", func(ctx context.Context) {
		// The watch cache keeps at least the last 75 s of a resource's
		// changes (and at least 100 of them): a resourceVersion falls out
		// of it once the cache is full and its oldest change is older.
		// Podtemplates change nowhere else in the suite.
		ns := createNamespace(ctx, "proxy-gone")
		create := func(prefix string, n int) string {
			GinkgoHelper()
			var first string
			for i := range n {
				pt, err := clientset.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", prefix, i)},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "c", Image: "i"}},
					}},
				}, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				if i == 0 {
					first = pt.ResourceVersion
				}
			}
			return first
		}
		old := create("old", 100)
		time.Sleep(76 * time.Second)
		create("new", 200)

		proxy, err := faultproxy.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		for _, accept := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON} {
			real := answer(ctx, cfg, ns, old, accept)
			Expect(real.HTTPStatus).To(Equal(http.StatusOK), "the API server's answer (%s): %+v", accept, real)
			Expect(real.Code).To(Equal(int32(http.StatusGone)), "the API server's answer (%s): %+v", accept, real)

			in, err := proxy.Inject(faultproxy.Rule{Match: faultproxy.Match{Verbs: []faultproxy.Verb{faultproxy.Watch}}, Fault: faultproxy.Fault{Kind: faultproxy.Gone}, Times: 2})
			Expect(err).NotTo(HaveOccurred())
			Expect(answer(ctx, proxy.ClientConfig(), ns, old, accept)).To(Equal(real), "the proxy's Gone (%s)", accept)
			Expect(in.Done()).To(BeTrue())
		}
	})

	It("counts a GET of one object with ?watch=true as the API server serves it: a get", func(ctx context.Context) {
		ns := createNamespace(ctx, "proxy-get")
		_, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		proxy, err := faultproxy.New(cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)

		before := proxy.Stats().Requests
		body, err := kubernetes.NewForConfigOrDie(proxy.ClientConfig()).CoreV1().RESTClient().Get().
			AbsPath("/api/v1/namespaces", ns, "configmaps", "cm").Param("watch", "true").
			SetHeader("Accept", runtime.ContentTypeJSON).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(HavePrefix(`{"kind":"ConfigMap"`), "the API server answers with the object, not a watch stream")
		after := proxy.Stats().Requests
		Expect(after.Watches - before.Watches).To(BeZero())
		Expect(after.Other - before.Other).To(Equal(int64(1)))
	})
})
