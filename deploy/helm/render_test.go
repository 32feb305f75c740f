package helmchart_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The release every test renders: `helm template demo deploy/helm/hookbus
// --namespace agents`.
const (
	releaseName = "demo"
	namespace   = "agents"
	fullname    = "demo-hookbus"
)

// loadChart loads the chart with testdata/nats as its nats dependency, as
// `helm dependency update` would put it in charts/. A fresh copy each
// time: processing the dependencies removes a disabled one from it.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.LoadDir("hookbus")
	if err != nil {
		t.Fatal(err)
	}
	nats, err := loader.LoadDir("testdata/nats")
	if err != nil {
		t.Fatal(err)
	}
	c.SetDependencies(nats)
	return c
}

// render renders the chart with the values of valuesYAML over its
// defaults, as `helm template` does: the dependencies' conditions, the
// values' schemas, then the template engine. It returns the rendered
// files (NOTES.txt included) or the first error.
func render(t testing.TB, valuesYAML string) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	vals, err := chartutil.ReadValues([]byte(valuesYAML))
	if err != nil {
		t.Fatalf("test values: %v", err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}
	top, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, top)
}

// object is one rendered manifest, decoded into its API type.
type object struct {
	file string // the template it came from
	kind string
	name string
	meta metav1.ObjectMeta
	obj  any
}

// types are the API types the manifests decode into, by apiVersion/kind:
// a kind the chart (or the NATS chart) is not expected to make fails.
var types = map[string]func() any{
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"v1/PersistentVolumeClaim":                func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PodMonitor":     func() any { return &monitoringv1.PodMonitor{} },
}

// decodeStrict decodes one manifest into v, as the API server reads it
// (YAML to JSON), failing on any field v's type does not have.
func decodeStrict(doc string, v any) error {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one object")
	}
	return nil
}

// rendered is a release's manifests.
type rendered struct {
	objs  []object
	notes string
}

// decodeAll decodes every manifest of files strictly.
func decodeAll(t testing.TB, files map[string]string) *rendered {
	t.Helper()
	r := &rendered{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, file := range names {
		if strings.HasSuffix(file, "NOTES.txt") {
			if strings.HasPrefix(file, "hookbus/") {
				r.notes = files[file]
			}
			continue
		}
		for _, doc := range releaseutil.SplitManifests(files[file]) {
			if isEmpty(doc) {
				continue
			}
			var head struct {
				metav1.TypeMeta `json:",inline"`
				Metadata        metav1.ObjectMeta `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", file, err, doc)
			}
			key := head.APIVersion + "/" + head.Kind
			newObj, ok := types[key]
			if !ok {
				t.Fatalf("%s: a %s the test does not know: add its type\n%s", file, key, doc)
			}
			obj := newObj()
			if err := decodeStrict(doc, obj); err != nil {
				t.Fatalf("%s: %s %s does not decode strictly into %T: %v\n%s", file, head.Kind, head.Metadata.Name, obj, err, doc)
			}
			r.objs = append(r.objs, object{file: file, kind: head.Kind, name: head.Metadata.Name, meta: head.Metadata, obj: obj})
		}
	}
	return r
}

// isEmpty reports whether a manifest holds nothing but blanks and
// comments.
func isEmpty(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// mustRender renders valid values and decodes every manifest.
func mustRender(t testing.TB, valuesYAML string) *rendered {
	t.Helper()
	files, err := render(t, valuesYAML)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return decodeAll(t, files)
}

func (r *rendered) find(kind, name string) any {
	for _, o := range r.objs {
		if o.kind == kind && o.name == name {
			return o.obj
		}
	}
	return nil
}

func (r *rendered) deployment(t testing.TB, name string) *appsv1.Deployment {
	t.Helper()
	d, _ := r.find("Deployment", name).(*appsv1.Deployment)
	if d == nil {
		t.Fatalf("no Deployment %s; rendered: %v", name, r.names())
	}
	return d
}

func (r *rendered) secret(name string) *corev1.Secret {
	s, _ := r.find("Secret", name).(*corev1.Secret)
	return s
}

// names lists the objects as Kind/name.
func (r *rendered) names() []string {
	var out []string
	for _, o := range r.objs {
		out = append(out, o.kind+"/"+o.name)
	}
	sort.Strings(out)
	return out
}

// ours are the objects of the hookbus chart itself (not the NATS chart's).
func (r *rendered) ours() []object {
	var out []object
	for _, o := range r.objs {
		if strings.HasPrefix(o.file, "hookbus/templates/") {
			out = append(out, o)
		}
	}
	return out
}

// podSpec is the pod template of a workload.
func podSpec(obj any) (*corev1.PodTemplateSpec, bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template, true
	case *appsv1.StatefulSet:
		return &o.Spec.Template, true
	case *batchv1.Job:
		return &o.Spec.Template, true
	}
	return nil, false
}

// secretKeys are the keys a Secret holds (data and stringData).
func secretKeys(s *corev1.Secret) map[string]bool {
	keys := map[string]bool{}
	for k := range s.Data {
		keys[k] = true
	}
	for k := range s.StringData {
		keys[k] = true
	}
	return keys
}

// natsServerVersion is go.mod's nats-server version, without its v: the
// NATS release hookbus embeds and is tested against.
func natsServerVersion(t testing.TB) string {
	t.Helper()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 v(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no nats-server")
	}
	return string(m[1])
}
