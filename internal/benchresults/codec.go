package benchresults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Decode reads one Results from r. It fails on a field the schema does not
// have, so that a file written with a renamed or removed field is an error
// rather than figures read as zeros, and on anything after the value.
func Decode(r io.Reader) (*Results, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var res Results
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("decode the results: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode the results: data after the results' JSON value")
	}
	return &res, nil
}

// ReadFile decodes the results file at path with Decode.
func ReadFile(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res, err := Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// numberArray is a JSON array of numbers as MarshalIndent spreads it over
// lines, one element a line.
var numberArray = regexp.MustCompile(`\[(\s*-?[0-9][0-9.eE+-]*,)*\s*-?[0-9][0-9.eE+-]*\s*\]`)

// Encode returns r as a results file holds it: indented, but with arrays of
// numbers (the timelines) on one line each, so that the file stays readable
// and its diffs reviewable; it ends with a newline.
func Encode(r *Results) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the results: %w", err)
	}
	b = numberArray.ReplaceAllFunc(b, func(a []byte) []byte {
		return []byte(strings.Join(strings.Fields(string(a)), ""))
	})
	return append(b, '\n'), nil
}
