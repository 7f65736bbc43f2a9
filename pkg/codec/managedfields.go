package codec

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withCompactFields returns p, or, if any of its managedFields' FieldsV1
// has a compact form, a shallow copy of p whose managedFields are a new
// slice holding the compact forms: the caller's object is never changed.
func (c *Codec) withCompactFields(p protoObject, v reflect.Value) protoObject {
	m, ok := p.(metav1.Object)
	if !ok {
		return p
	}
	entries := m.GetManagedFields()
	if len(entries) == 0 {
		return p
	}
	var compacted []metav1.ManagedFieldsEntry
	var inlined []inlinedKey
	d := &c.fieldKeys
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range entries {
		f := entries[i].FieldsV1
		if f == nil {
			continue
		}
		raw, ok := d.compactFields(f.GetRawBytes(), &inlined)
		if !ok {
			continue
		}
		if compacted == nil {
			compacted = append([]metav1.ManagedFieldsEntry(nil), entries...)
		}
		// One copy of raw (NewFieldsV1(string(raw)) would make two).
		compacted[i].FieldsV1 = new(metav1.FieldsV1)
		compacted[i].FieldsV1.SetRawBytes(raw)
	}
	d.admit(inlined)
	if compacted == nil {
		return p
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out := cp.Interface().(protoObject)
	out.(metav1.Object).SetManagedFields(compacted)
	return out
}

// expandCompactFields restores, in obj which was just decoded, the JSON
// bytes of every FieldsV1 that withCompactFields compacted.
func (c *Codec) expandCompactFields(obj protoObject) error {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	entries := m.GetManagedFields()
	var keys []string // loaded once, when the first compact form is met
	for i := range entries {
		f := entries[i].FieldsV1
		raw := f.GetRawBytes()
		if len(raw) == 0 || raw[0] != compactMark {
			continue
		}
		if keys == nil {
			keys = c.fieldKeys.snapshot()
		}
		buf := decompressBuffers.Get().(*[]byte)
		out, err := expandFields((*buf)[:0], raw, keys)
		if err != nil {
			decompressBuffers.Put(buf)
			return fmt.Errorf("managedFields[%d] (manager %q): %w", i, entries[i].Manager, err)
		}
		f.SetRawBytes(out) // copies out
		*buf = out
		decompressBuffers.Put(buf)
	}
	return nil
}
