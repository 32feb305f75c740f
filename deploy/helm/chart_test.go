package helmchart_test

import (
	"crypto/rand"
	"golang.org/x/mod/sumdb/note"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/nats-io/nkeys"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// everything turns every component on: the gateway, the exporter, the
// ServiceMonitor, the Ingress, an agent file and a signing key (its seed
// and public key as "loop keygen" prints them).
func everything(t testing.TB) string {
	t.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	_, witness, err := note.GenerateKey(rand.Reader, "w1")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("SEED", string(seed), "PUBLIC", pub, "WITNESS", witness).Replace(everythingYAML)
}

const everythingYAML = `
ui:
  publicURL: https://hookbus.example.com
  allowApprovals: true
  ingress: {enabled: true, className: nginx, tlsSecretName: hookbus-tls}
gateway:
  enabled: true
  publicURL: https://hooks.example.com
otel:
  enabled: true
  endpoint: http://otel-collector.observability:4317
  protocol: grpc
  headersSecret: {name: langfuse-otlp}
  captureContent: true
metrics:
  serviceMonitor: {enabled: true, labels: {release: prometheus}}
worker:
  agents: |
    agents:
      - id: support
        model: openai:gpt-4o-mini
signing:
  seed: SEED
  publicKey: PUBLIC
natsAuth:
  approvers: [alice]
  plugins: [{name: plugin-pii}]
  witnesses: [{name: w1, user: witness}]
checkpointer:
  enabled: true
  keySecret: hookbus-log-key
  every: 500
  witnesses: [w1=WITNESS]
`

// The defaults render a working release: every manifest decodes strictly,
// and what a real cluster needs of them holds.
func TestChartDefaults(t *testing.T) {
	r := mustRender(t, "")
	checkRelease(t, r, nil)
	want := []string{
		"Deployment/demo-hookbus-ui", "Deployment/demo-hookbus-worker", "Job/demo-hookbus-provision",
		"PodDisruptionBudget/demo-hookbus-worker", "Secret/demo-hookbus-metrics", "Secret/demo-hookbus-nats",
		"Secret/demo-hookbus-nats-accounts", "Secret/demo-hookbus-ui", "Service/demo-hookbus-ui", "Service/demo-hookbus-worker",
	}
	var ours []string
	for _, o := range r.ours() {
		ours = append(ours, o.kind+"/"+o.name)
	}
	slices.Sort(ours)
	if !slices.Equal(ours, want) {
		t.Errorf("the chart's objects:\n  %v\nwant\n  %v", ours, want)
	}
	// The NATS chart's 3-node cluster is there, on the NATS release
	// hookbus is built against.
	ss, _ := r.find("StatefulSet", "demo-nats").(*appsv1.StatefulSet)
	if ss == nil || ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Fatalf("NATS StatefulSet: %+v", ss)
	}
	if img := ss.Spec.Template.Spec.Containers[0].Image; img != "nats:"+natsServerVersion(t)+"-alpine" {
		t.Errorf("NATS image %s, want go.mod's nats-server %s", img, natsServerVersion(t))
	}
	w := r.deployment(t, fullname+"-worker")
	if got := arg(w.Spec.Template.Spec.Containers[0], "--nats"); got != "$(NATS_URL)" {
		t.Errorf("worker --nats %q", got)
	}
	if env := envValue(w.Spec.Template.Spec.Containers[0], "NATS_URL"); env != "nats://demo-nats:4222" {
		t.Errorf("NATS_URL %q, want the NATS chart's Service", env)
	}
	job, _ := r.find("Job", fullname+"-provision").(*batchv1.Job)
	if job.Annotations["helm.sh/hook"] != "post-install,pre-upgrade" || envValue(job.Spec.Template.Spec.Containers[0], "NATS_USER") != "admin" {
		t.Errorf("provision Job: annotations %v, user %q", job.Annotations, envValue(job.Spec.Template.Spec.Containers[0], "NATS_USER"))
	}
	if !strings.Contains(r.notes, "demo-hookbus-ui -o jsonpath='{.data.admin-token}'") {
		t.Errorf("NOTES.txt does not say how to read the page's token:\n%s", r.notes)
	}
}

// Every component on: still strict, still whole; the ServiceMonitors,
// the Ingress and each component's user and flags.
func TestChartEverything(t *testing.T) {
	values := everything(t)
	r := mustRender(t, values)
	checkRelease(t, r, []string{"langfuse-otlp", "hookbus-log-key"})
	for _, name := range []string{"ui", "worker", "gateway", "otel", "checkpointer"} {
		r.deployment(t, fullname+"-"+name)
	}
	for _, c := range []struct{ deployment, user string }{{"worker", "loop"}, {"gateway", "loop"}, {"ui", "webui"}, {"otel", "auditor"}, {"checkpointer", "checkpointer"}} {
		if got := envValue(r.deployment(t, fullname+"-"+c.deployment).Spec.Template.Spec.Containers[0], "NATS_USER"); got != c.user {
			t.Errorf("%s connects as %q, want %q", c.deployment, got, c.user)
		}
	}
	for _, name := range []string{fullname + "-worker", fullname + "-otel"} {
		sm, _ := r.find("ServiceMonitor", name).(*monitoringv1.ServiceMonitor)
		if sm == nil {
			t.Fatalf("no ServiceMonitor %s: %v", name, r.names())
		}
		if sm.Labels["release"] != "prometheus" || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Authorization == nil {
			t.Errorf("ServiceMonitor %s: %+v", name, sm)
		}
	}
	ing, _ := r.find("Ingress", fullname+"-ui").(*networkingv1.Ingress)
	if ing == nil || ing.Spec.Rules[0].Host != "hookbus.example.com" || ing.Spec.TLS[0].SecretName != "hookbus-tls" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != fullname+"-ui" {
		t.Errorf("Ingress: %+v", ing)
	}
	ui := r.deployment(t, fullname+"-ui").Spec.Template.Spec.Containers[0]
	pub := regexp.MustCompile(`publicKey: (\S+)`).FindStringSubmatch(values)[1]
	for _, a := range []string{"--allow-approvals", "--public-key=" + pub, "--public-url=https://hookbus.example.com"} {
		if !slices.Contains(ui.Args, a) {
			t.Errorf("ui args %v lack %s", ui.Args, a)
		}
	}
	worker := r.deployment(t, fullname+"-worker").Spec.Template.Spec.Containers[0]
	for _, a := range []string{"--agents=/etc/hookbus/agents/agents.yaml", "--signing-key=/etc/hookbus/signing/seed"} {
		if !slices.Contains(worker.Args, a) {
			t.Errorf("worker args %v lack %s", worker.Args, a)
		}
	}
	cp := r.deployment(t, fullname+"-checkpointer")
	if *cp.Spec.Replicas != 1 || cp.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the checkpointer runs %d replicas (%s): one per log", *cp.Spec.Replicas, cp.Spec.Strategy.Type)
	}
	if !slices.ContainsFunc(cp.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == fullname+"-checkpointer-state"
	}) || !slices.ContainsFunc(cp.Spec.Template.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.MountPath == "/var/lib/hookbus/checkpointer" && !m.ReadOnly
	}) {
		t.Errorf("the checkpointer's state is on no volume of its own: %+v", cp.Spec.Template.Spec.Volumes)
	}
	for _, a := range []string{"checkpointer", "--key=/etc/hookbus/log/key", "--state=/var/lib/hookbus/checkpointer/log.checkpoint", "--every=500", "--interval=10s", "--witness=" + regexp.MustCompile(`witnesses: \[(w1=\S+)\]`).FindStringSubmatch(values)[1]} {
		if !slices.Contains(cp.Spec.Template.Spec.Containers[0].Args, a) {
			t.Errorf("checkpointer args %v lack %s", cp.Spec.Template.Spec.Containers[0].Args, a)
		}
	}
	otel := r.deployment(t, fullname+"-otel")
	if *otel.Spec.Replicas != 1 || otel.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the exporter runs %d replicas (%s): it is one durable consumer", *otel.Spec.Replicas, otel.Spec.Strategy.Type)
	}
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true", "OTEL_SERVICE_NAME": "hookbus"} {
		if got := envValue(otel.Spec.Template.Spec.Containers[0], k); got != v {
			t.Errorf("exporter %s = %q, want %q", k, got, v)
		}
	}
	gw := r.deployment(t, fullname+"-gateway").Spec.Template.Spec
	if gw.Containers[0].Lifecycle == nil || gw.Containers[0].Lifecycle.PreStop == nil || gw.Containers[0].Lifecycle.PreStop.Sleep == nil ||
		int64(gw.Containers[0].Lifecycle.PreStop.Sleep.Seconds) >= *gw.TerminationGracePeriodSeconds {
		t.Errorf("gateway preStop %+v, grace %d", gw.Containers[0].Lifecycle, *gw.TerminationGracePeriodSeconds)
	}
}

// Without the bundled NATS: no NATS objects, the components connect to
// bus.url, the passwords come from a Secret of the operator's, and the
// provisioning Job is a plain Job of the revision.
func TestChartExternalNATS(t *testing.T) {
	r := mustRender(t, `
nats: {enabled: false}
bus: {url: "tls://nats-1.example.com:4222,tls://nats-2.example.com:4222", prefix: acme}
natsAuth: {existingSecret: acme-nats-users}
provision: {hook: false}
metrics: {existingSecret: acme-metrics}
ui: {existingSecret: acme-ui-tokens}
`)
	checkRelease(t, r, []string{"acme-nats-users", "acme-metrics", "acme-ui-tokens"})
	for _, o := range r.objs {
		if !strings.HasPrefix(o.file, "hookbus/") || strings.Contains(o.name, "nats") {
			t.Errorf("%s/%s (%s) rendered without the bundled NATS", o.kind, o.name, o.file)
		}
	}
	w := r.deployment(t, fullname+"-worker").Spec.Template.Spec.Containers[0]
	if envValue(w, "NATS_URL") != "tls://nats-1.example.com:4222,tls://nats-2.example.com:4222" || arg(w, "--prefix") != "acme" {
		t.Errorf("worker: NATS_URL %q, --prefix %q", envValue(w, "NATS_URL"), arg(w, "--prefix"))
	}
	if job, _ := r.find("Job", fullname+"-provision-1").(*batchv1.Job); job == nil || job.Annotations["helm.sh/hook"] != "" {
		t.Errorf("provision.hook false: want Job %s-provision-1 without hook annotations; got %v", fullname, r.names())
	}
}

// checkRelease checks what makes a release work on a cluster, for every
// object: names, labels, selectors, probes, references to Secrets and
// ConfigMaps (external: Secrets the operator makes), $(VAR)s, the drain.
func checkRelease(t *testing.T, r *rendered, external []string) {
	t.Helper()
	secrets, configMaps := map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, o := range r.objs {
		switch v := o.obj.(type) {
		case *corev1.Secret:
			secrets[o.name] = secretKeys(v)
		case *corev1.ConfigMap:
			keys := map[string]bool{}
			for k := range v.Data {
				keys[k] = true
			}
			configMaps[o.name] = keys
		}
		if errs := validation.IsDNS1123Subdomain(o.name); len(errs) > 0 {
			t.Errorf("%s %s: %v", o.kind, o.name, errs)
		}
		if errs := validation.IsDNS1123Label(o.name); o.kind == "Service" && len(errs) > 0 {
			t.Errorf("Service %s: %v", o.name, errs)
		}
	}
	for _, o := range r.ours() {
		// Token files are ones hookbus reads.
		if s, ok := o.obj.(*corev1.Secret); ok && s.StringData["tokens"] != "" {
			if _, err := httpauth.ParseTokens(strings.NewReader(s.StringData["tokens"]), o.name); err != nil {
				t.Errorf("Secret %s: tokens: %v", o.name, err)
			}
		}
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app.kubernetes.io/managed-by", "app.kubernetes.io/part-of", "helm.sh/chart"} {
			if o.meta.Labels[l] == "" {
				t.Errorf("%s %s has no label %s", o.kind, o.name, l)
			}
		}
		if !strings.HasPrefix(o.name, fullname+"-") && !strings.HasPrefix(o.name, releaseName+"-hookbus-") {
			t.Errorf("%s %s is not named after the release", o.kind, o.name)
		}
		if len(o.name) > 63 {
			t.Errorf("%s %s: longer than 63 characters", o.kind, o.name)
		}
	}
	secretRef := func(where, name, key string, optional bool) {
		if slices.Contains(external, name) || optional {
			return
		}
		keys, ok := secrets[name]
		switch {
		case !ok:
			t.Errorf("%s: Secret %s is not rendered", where, name)
		case key != "" && !keys[key]:
			t.Errorf("%s: Secret %s has no key %s", where, name, key)
		}
	}
	pods := map[string]*corev1.PodTemplateSpec{}
	for _, o := range r.objs {
		tpl, ok := podSpec(o.obj)
		if !ok {
			continue
		}
		pods[o.kind+"/"+o.name] = tpl
		where := o.kind + " " + o.name
		for _, v := range tpl.Spec.Volumes {
			switch {
			case v.Secret != nil:
				secretRef(where+" volume "+v.Name, v.Secret.SecretName, "", v.Secret.Optional != nil && *v.Secret.Optional)
				for _, it := range v.Secret.Items {
					secretRef(where+" volume "+v.Name, v.Secret.SecretName, it.Key, false)
				}
			case v.ConfigMap != nil:
				keys, ok := configMaps[v.ConfigMap.Name]
				if !ok && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional) {
					t.Errorf("%s volume %s: ConfigMap %s is not rendered", where, v.Name, v.ConfigMap.Name)
				}
				for _, it := range v.ConfigMap.Items {
					if !keys[it.Key] {
						t.Errorf("%s volume %s: ConfigMap %s has no key %s", where, v.Name, v.ConfigMap.Name, it.Key)
					}
				}
			}
		}
		for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					ref := e.ValueFrom.SecretKeyRef
					secretRef(where+" env "+e.Name, ref.Name, ref.Key, ref.Optional != nil && *ref.Optional)
				}
			}
			for _, m := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(strings.Join(append(slices.Clone(c.Command), c.Args...), " "), -1) {
				if !env[m[1]] {
					t.Errorf("%s container %s: $(%s) on its command line is not in its environment (Kubernetes leaves it as is)", where, c.Name, m[1])
				}
			}
			mounts := map[string]bool{}
			for _, v := range tpl.Spec.Volumes {
				mounts[v.Name] = true
			}
			if ss, ok := o.obj.(*appsv1.StatefulSet); ok {
				for _, pvc := range ss.Spec.VolumeClaimTemplates {
					mounts[pvc.Name] = true
				}
			}
			for _, m := range c.VolumeMounts {
				if !mounts[m.Name] {
					t.Errorf("%s container %s mounts %s, which is no volume of the pod", where, c.Name, m.Name)
				}
			}
		}
		if !strings.HasPrefix(o.file, "hookbus/templates/") {
			continue
		}
		c := tpl.Spec.Containers[0]
		if o.kind == "Deployment" {
			checkProbes(t, where, c)
		}
		// The image's binaries (deploy/Dockerfile), named whatever its
		// entrypoint.
		if len(c.Command) != 1 || !slices.Contains([]string{"/usr/local/bin/loop", "/usr/local/bin/observer"}, c.Command[0]) {
			t.Errorf("%s: command %v, want the image's loop or observer", where, c.Command)
		}
		if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
			tpl.Spec.SecurityContext == nil || tpl.Spec.SecurityContext.RunAsNonRoot == nil || !*tpl.Spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: not a read-only, non-root container", where)
		}
		if strings.HasSuffix(o.name, "-worker") {
			drain, err := time.ParseDuration(arg(c, "--drain-timeout"))
			if err != nil || tpl.Spec.TerminationGracePeriodSeconds == nil || time.Duration(*tpl.Spec.TerminationGracePeriodSeconds)*time.Second < drain+15*time.Second {
				t.Errorf("%s: --drain-timeout %q (%v), termination grace %v: the grace must leave 15s to hand runs back", where, arg(c, "--drain-timeout"), err, tpl.Spec.TerminationGracePeriodSeconds)
			}
		}
	}
	// Services, PodDisruptionBudgets and ServiceMonitors select pods that
	// exist, and name ports they have.
	services := map[string]*corev1.Service{}
	for _, o := range r.objs {
		switch v := o.obj.(type) {
		case *corev1.Service:
			services[o.name] = v
			tpl := selectOne(t, "Service "+o.name, labels.SelectorFromSet(v.Spec.Selector), pods)
			if tpl == nil {
				continue
			}
			for _, p := range v.Spec.Ports {
				if p.TargetPort.StrVal != "" && !hasPort(tpl, p.TargetPort.StrVal) {
					t.Errorf("Service %s: target port %s is no port of its pods", o.name, p.TargetPort.StrVal)
				}
			}
		case *policyv1.PodDisruptionBudget:
			sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
			if err != nil {
				t.Errorf("PodDisruptionBudget %s: %v", o.name, err)
				continue
			}
			selectOne(t, "PodDisruptionBudget "+o.name, sel, pods)
		}
	}
	for _, o := range r.objs {
		sm, ok := o.obj.(*monitoringv1.ServiceMonitor)
		if !ok {
			continue
		}
		n := 0
		for name, svc := range services {
			if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)) {
				n++
				for _, ep := range sm.Spec.Endpoints {
					if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
						t.Errorf("ServiceMonitor %s: Service %s has no port %s", o.name, name, ep.Port)
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", o.name, n)
		}
		for _, ep := range sm.Spec.Endpoints {
			if ep.Authorization == nil || ep.Authorization.Credentials == nil {
				t.Errorf("ServiceMonitor %s: no bearer token (the endpoints refuse Prometheus without one)", o.name)
				continue
			}
			secretRef("ServiceMonitor "+o.name, ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key, false)
		}
	}
}

// checkProbes: liveness on /healthz, readiness on /readyz, both on a port
// the container declares.
func checkProbes(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no %s probe over HTTP", where, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: %s probe on %s, want %s", where, p.kind, p.probe.HTTPGet.Path, p.path)
		}
		port := p.probe.HTTPGet.Port.StrVal
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port }) {
			t.Errorf("%s: %s probe on port %q, which the container does not declare", where, p.kind, port)
		}
	}
}

// selectOne is the one pod template sel selects.
func selectOne(t *testing.T, what string, sel labels.Selector, pods map[string]*corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	t.Helper()
	var found []string
	var tpl *corev1.PodTemplateSpec
	for name, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			found = append(found, name)
			tpl = p
		}
	}
	if len(found) != 1 {
		t.Errorf("%s selects %v, want one workload", what, found)
		return nil
	}
	return tpl
}

func hasPort(tpl *corev1.PodTemplateSpec, name string) bool {
	for _, c := range tpl.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

// arg is the value of a --flag=value argument ("" when absent).
func arg(c corev1.Container, flag string) string {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
