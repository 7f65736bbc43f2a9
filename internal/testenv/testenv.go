// Package testenv finds the envtest binaries for this repository's tests and
// benchmarks: KUBEBUILDER_ASSETS when set, else the folder hack/envtest-binaries.sh
// caches them in.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// KubernetesVersion is the release the envtest binaries are built from.
const KubernetesVersion = "v1.37.2"

// AssetsDir returns the folder holding kube-apiserver and etcd, or an error
// that says how to get them.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, checkAssets(dir)
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and the repository root cannot be found")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "bin", "k8s", KubernetesVersion)
	if err := checkAssets(dir); err != nil {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is not set and %w; run `make test` or hack/envtest-binaries.sh", err)
	}
	return dir, nil
}

func checkAssets(dir string) error {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("no %s in %s", bin, dir)
		}
	}
	return nil
}
