package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The API server protects itself with API Priority and Fairness: a ServiceAccount's requests
// queue in their own priority level and get 429 (which client-go retries) when it is full. The
// client-side bucket is the backstop against this process looping on the API, not the fairness
// mechanism, so it is sized for the calls the server makes rather than client-go's 5/s:
// a claim-targeted call costs nothing when the watch cache answers and two GETs when it
// cannot; create_sandbox costs about four requests. 100/s with a burst of 200 lets 50 such
// misses a second through without queueing, sustained.
const (
	DefaultQPS   = 100
	DefaultBurst = 200
	// NoRateLimit as the QPS turns the client-side limit off (client-go's convention).
	NoRateLimit = -1
)

// WithRateLimit sets the one token bucket every API request of the Client draws from: qps
// requests a second with bursts of burst, or no client-side limit with qps NoRateLimit.
func WithRateLimit(qps, burst int) Option {
	return func(o *options) { o.qps, o.burst = qps, burst }
}

func (o options) validateRateLimit() error { return CheckRateLimit(o.qps, o.burst) }

// CheckRateLimit says what is wrong with a rate limit WithRateLimit would refuse.
func CheckRateLimit(qps, burst int) error {
	if qps == NoRateLimit {
		return nil
	}
	if qps <= 0 || burst <= 0 {
		return fmt.Errorf("%w: API rate limit %d/s with burst %d: both must be positive (or the rate %d for no client-side limit)",
			ErrInvalid, qps, burst, NoRateLimit)
	}
	return nil
}

// applyRateLimit gives cfg one limiter that the clientsets built from it share (each would
// otherwise make its own bucket, multiplying the budget by the number of API groups).
func (o options) applyRateLimit(cfg *rest.Config) {
	if o.qps == NoRateLimit {
		cfg.QPS, cfg.RateLimiter = NoRateLimit, nil
		return
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
}
