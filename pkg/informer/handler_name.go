package informer

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
)

// handlerName describes a handler for logs, metric labels and
// HasSyncedChecker names: the package-qualified type, or for
// ResourceEventHandlerFuncs what the functions' names share once their last
// element is cut: the function whose closures they are, or the receiver type
// of method values (their full names joined by "+" when that differs).
func handlerName(handler toolscache.ResourceEventHandler) string {
	switch h := handler.(type) {
	case nil:
		return "<nil>"
	case toolscache.ResourceEventHandlerFuncs:
		if name := funcsName(h.AddFunc, h.UpdateFunc, h.DeleteFunc); name != "" {
			return name
		}
	case *toolscache.ResourceEventHandlerFuncs:
		if h != nil {
			if name := funcsName(h.AddFunc, h.UpdateFunc, h.DeleteFunc); name != "" {
				return name
			}
		}
	default:
		t := reflect.TypeOf(handler)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Name() != "" {
			if t.PkgPath() != "" {
				return t.PkgPath() + "." + t.Name()
			}
			return t.Name()
		}
	}
	return fmt.Sprintf("%T", handler)
}

func funcsName(funcs ...any) string {
	var names []string
	pkg := ""
	onePkg := true
	for _, f := range funcs {
		v := reflect.ValueOf(f)
		if !v.IsValid() || v.IsNil() {
			continue
		}
		fn := runtime.FuncForPC(v.Pointer())
		if fn == nil {
			continue
		}
		name := fn.Name()
		names = append(names, name)
		p := name
		if i := strings.LastIndexByte(p, '.'); i > 0 {
			p = p[:i]
		}
		switch pkg {
		case "":
			pkg = p
		case p:
		default:
			onePkg = false
		}
	}
	if onePkg {
		return pkg
	}
	return strings.Join(names, "+")
}
