// Package codec turns API objects into compact bytes and back, for a store
// that keeps objects encoded (see cache.WithCodec) and decodes a fresh copy
// on every read.
//
// A Codec encodes:
//   - built-in typed objects (*corev1.Pod, ...) and
//     *metav1.PartialObjectMetadata as protobuf, through the types'
//     generated Marshal and Unmarshal methods;
//   - *unstructured.Unstructured as CBOR, with apimachinery's CBOR encoding
//     (k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct).
//
// In typed objects, managedFields' FieldsV1 (JSON, most of a Pod's
// protobuf) is kept in a compact form: its tree, with keys numbered in a
// bounded dictionary of the Codec (see MaxFieldKeys), decoded back to the
// exact original bytes.
//
// Anything else (a custom type without protobuf methods, an unstructured
// object holding values JSON cannot represent) is refused with an error
// wrapping ErrUnsupported; a store then keeps that object as it is.
//
// What survives the round trip is what a client reading the object from the
// API server in that encoding receives: every field, and the object's
// TypeMeta (apiVersion and kind, which typed protobuf does not carry: the
// codec records it beside the type). Where the decoded object can differ
// from the one encoded, it is in representation only, as described on
// Codec.Decode.
package codec
