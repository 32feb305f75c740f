package policy

import (
	"fmt"
	"reflect"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"
)

// The object types expressions read (event, call, action): declared
// field by field, so that an unknown field is a type error, and read
// without reflection: an evaluation builds each object once and its
// fields are values already.

// objDef is one object type: its fields, in order.
type objDef struct {
	typ    *types.Type
	names  []string
	fields map[string]*types.FieldType
}

func newObjDef(name string, fields ...objField) *objDef {
	d := &objDef{typ: types.NewObjectType(name), fields: map[string]*types.FieldType{}}
	for i, f := range fields {
		d.names = append(d.names, f.name)
		d.fields[f.name] = &types.FieldType{
			Type: f.typ,
			IsSet: func(target any) bool {
				o, ok := target.(*object)
				return ok && o.def == d && isSet(o.vals[i])
			},
			GetFrom: func(target any) (any, error) {
				o, ok := target.(*object)
				if !ok || o.def != d {
					return nil, fmt.Errorf("not a %s", d.typ)
				}
				return o.vals[i], nil
			},
		}
	}
	return d
}

type objField struct {
	name string
	typ  *types.Type
}

// The object types, their fields in the order objects hold them.
var (
	actionDef = newObjDef("hookbus.Action",
		objField{"kind", types.StringType}, objField{"command", types.StringType},
		objField{"paths", types.NewListType(types.StringType)}, objField{"url", types.StringType},
		objField{"query", types.StringType}, objField{"server", types.StringType},
		objField{"mcp_tool", types.StringType})
	eventDef = newObjDef("hookbus.Event",
		objField{"stage", types.StringType}, objField{"id", types.StringType},
		objField{"source", types.StringType}, objField{"agent", types.StringType},
		objField{"session", types.StringType}, objField{"run", types.StringType},
		objField{"step", types.IntType}, objField{"subject", types.StringType},
		objField{"time", types.TimestampType})
	callDef = newObjDef("hookbus.Call",
		objField{"id", types.StringType}, objField{"name", types.StringType},
		objField{"arguments", types.NewMapType(types.StringType, types.DynType)})
)

// objects is a types.Provider that adds the object types to the
// environment's own.
type objects struct {
	types.Provider
	defs map[string]*objDef
}

// withObjects declares the object types in an environment.
func withObjects() cel.EnvOption {
	return func(e *cel.Env) (*cel.Env, error) {
		p := &objects{Provider: e.CELTypeProvider(), defs: map[string]*objDef{}}
		for _, d := range []*objDef{actionDef, eventDef, callDef} {
			p.defs[d.typ.TypeName()] = d
		}
		return cel.CustomTypeProvider(p)(e)
	}
}

// FindStructType implements types.Provider.
func (p *objects) FindStructType(name string) (*types.Type, bool) {
	if d, ok := p.defs[name]; ok {
		return types.NewTypeTypeWithParam(d.typ), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (p *objects) FindStructFieldNames(name string) ([]string, bool) {
	if d, ok := p.defs[name]; ok {
		return d.names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (p *objects) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if d, ok := p.defs[name]; ok {
		f, ok := d.fields[field]
		return f, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

// NewValue implements types.Provider: the objects are read, not built.
func (p *objects) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.defs[name]; ok {
		return types.NewErr("%s values are read from the event, not built", name)
	}
	return p.Provider.NewValue(name, fields)
}

// object is a value of one of the object types.
type object struct {
	def  *objDef
	vals []ref.Val
}

// newObject is an object of def holding vals (its fields, in order),
// allocated with them.
func newObject(def *objDef, vals ...ref.Val) *object {
	o := &struct {
		object
		buf [maxObjectFields]ref.Val
	}{}
	o.object = object{def: def, vals: o.buf[:copy(o.buf[:], vals)]}
	return &o.object
}

// maxObjectFields is the most fields an object type has (event's).
const maxObjectFields = 9

// ConvertToNative implements ref.Val: as JSON (a structpb.Value or a map).
func (o *object) ConvertToNative(t reflect.Type) (any, error) {
	m := make(map[string]any, len(o.vals))
	for i, v := range o.vals {
		n, err := v.ConvertToNative(jsonValueType)
		if err != nil {
			return nil, err
		}
		m[o.def.names[i]] = n.(*structpb.Value).AsInterface()
	}
	switch t {
	case jsonValueType:
		return structpb.NewValue(m)
	case reflect.TypeFor[map[string]any](), reflect.TypeFor[any]():
		return m, nil
	}
	return nil, fmt.Errorf("%s converts to JSON only, not %s", o.def.typ, t)
}

// ConvertToType implements ref.Val.
func (o *object) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return o.def.typ
	}
	if t.TypeName() == o.def.typ.TypeName() {
		return o
	}
	return types.NewErr("type conversion error from %s to %s", o.def.typ, t)
}

// Equal implements ref.Val: field by field.
func (o *object) Equal(other ref.Val) ref.Val {
	x, ok := other.(*object)
	if !ok || x.def != o.def {
		return types.False
	}
	for i := range o.vals {
		if o.vals[i].Equal(x.vals[i]) != types.True {
			return types.False
		}
	}
	return types.True
}

// Type implements ref.Val.
func (o *object) Type() ref.Type { return o.def.typ }

// Value implements ref.Val: the object itself, which the fields' getters
// read.
func (o *object) Value() any { return o }

func isSet(v ref.Val) bool {
	switch x := v.(type) {
	case types.String:
		return x != ""
	case types.Int:
		return x != 0
	case types.Timestamp:
		return !x.Time.IsZero()
	case interface{ Size() ref.Val }:
		return x.Size() != types.Int(0)
	}
	return v != nil
}
