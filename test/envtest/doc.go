// Package envtest holds the Ginkgo/Gomega suites that run leaninformer against
// a real kube-apiserver and etcd started by controller-runtime's envtest. The
// binaries are built from source by hack/envtest-binaries.sh; `make test`
// builds them and points KUBEBUILDER_ASSETS at them.
package envtest
