package benchresults_test

import (
	"fmt"
	"strings"

	"github.com/leaninformer/leaninformer/internal/benchresults"
)

// A results file with a field the schema does not have fails to decode,
// instead of reading as zeros.
func ExampleDecode() {
	r, err := benchresults.Decode(strings.NewReader(`{"command": "bench", "rows": [{"name": "client-go", "median": {"peakLiveBytes": 1048576}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Command, r.Rows[0].Median.PeakLive)

	_, err = benchresults.Decode(strings.NewReader(`{"command": "bench", "rows": [{"name": "client-go", "median": {"peakLiveHeapBytes": 1048576}}]}`))
	fmt.Println(err)
	// Output:
	// bench 1048576
	// decode the results: json: unknown field "peakLiveHeapBytes"
}
