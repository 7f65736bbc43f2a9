package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// clientLimits is the client-side rate limit of the children's rest.Config
// (--limits): what the users of client-go or controller-runtime get.
type clientLimits struct {
	// name is the --limits value.
	name string
	// qps and burst go into rest.Config as they are: 0 means client-go's
	// defaults, a negative QPS no limiter at all.
	qps   float32
	burst int
}

// The presets of --limits.
var (
	clientGoLimits = clientLimits{name: "client-go"}
	// controller-runtime's GetConfig set QPS 20, burst 30 up to v0.20;
	// from v0.21 it disables the client-side limiter (QPS -1), which is
	// --limits none.
	controllerRuntimeLimits = clientLimits{name: "controller-runtime-v0.20", qps: 20, burst: 30}
	noLimits                = clientLimits{name: "none", qps: -1}
)

const limitsUsage = "client-side rate limit of the children: client-go (a rest.Config without QPS and Burst: client-go's defaults, QPS 5, burst 10), " +
	"controller-runtime-v0.20 (QPS 20, burst 30, what controller-runtime's GetConfig set up to v0.20), " +
	"none (QPS -1: no client-side limiter, what controller-runtime's GetConfig sets from v0.21), or QPS/BURST"

// parseLimits reads a --limits value.
func parseLimits(s string) (clientLimits, error) {
	for _, l := range []clientLimits{clientGoLimits, controllerRuntimeLimits, noLimits} {
		if s == l.name {
			return l, nil
		}
	}
	q, b, ok := strings.Cut(s, "/")
	qps, err1 := strconv.ParseFloat(q, 32)
	burst, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || qps <= 0 || burst < 1 {
		return clientLimits{}, fmt.Errorf("--limits %q: want client-go, controller-runtime-v0.20, none or QPS/BURST with QPS > 0 and BURST >= 1", s)
	}
	return clientLimits{name: s, qps: float32(qps), burst: burst}, nil
}

// apply sets the limits on cfg.
func (l clientLimits) apply(cfg *rest.Config) { cfg.QPS, cfg.Burst = l.qps, l.burst }

// benchClientConfig is the children's client set-up on cfg, shared with
// --list-cost so both time the same client: protobuf, as controllers use for
// built-in types, and the client-side rate limit users have (every LIST page
// waits for it like any request).
func benchClientConfig(cfg *rest.Config, l clientLimits) {
	cfg.ContentType = apiruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = apiruntime.ContentTypeProtobuf + "," + apiruntime.ContentTypeJSON
	l.apply(cfg)
}

// effective returns the QPS and burst the client ends up with; qps <= 0
// means no limiter.
func (l clientLimits) effective() (qps float32, burst int) {
	switch {
	case l.qps < 0:
		return 0, 0
	case l.qps == 0:
		qps = rest.DefaultQPS
	default:
		qps = l.qps
	}
	burst = l.burst
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	return qps, burst
}

// String describes the limits for the report.
func (l clientLimits) String() string {
	qps, burst := l.effective()
	if qps <= 0 {
		return fmt.Sprintf("no client-side rate limit (--limits %s)", l.name)
	}
	return fmt.Sprintf("client rate limit QPS %g, burst %d (--limits %s)", qps, burst, l.name)
}

// refill is how long the client's limiter takes to refill its burst.
func (l clientLimits) refill() time.Duration {
	qps, burst := l.effective()
	if qps <= 0 {
		return 0
	}
	return time.Duration(float64(burst) / float64(qps) * float64(time.Second))
}
