package natsconf_test

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookbus/hookbus/internal/httpauth"
	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
)

// natsServerVersion is go.mod's nats-server version without its v: the
// release hookbus embeds, which the compose nodes run.
func natsServerVersion(t *testing.T) string {
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

// composeService is what the tests read of a compose service.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Secrets     []struct {
		Source string `yaml:"source"`
		Target string `yaml:"target"`
		UID    string `yaml:"uid"`
		Mode   int    `yaml:"mode"`
	} `yaml:"secrets"`
	Ports     []string  `yaml:"ports"`
	DependsOn yaml.Node `yaml:"depends_on"`
}

func (s composeService) flag(name string) string {
	for _, a := range s.Command {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// user is the NATS user of the service: $NATS_USER of its environment.
// Its server URLs carry no user or password (a URL shows in ps and in
// logs).
func (s composeService) user(t *testing.T, name string) string {
	t.Helper()
	servers := s.flag("--nats")
	if servers == "" {
		servers = s.flag("--server")
	}
	for _, u := range strings.Split(servers, ",") {
		p, err := url.Parse(u)
		if err != nil || p.User != nil {
			t.Fatalf("service %s: server URL %q: give the user and password in NATS_USER and NATS_PASSWORD, not in the URL", name, u)
		}
	}
	if s.Environment["NATS_USER"] == "" || s.Environment["NATS_PASSWORD"] == "" {
		t.Fatalf("service %s: no NATS_USER and NATS_PASSWORD in its environment", name)
	}
	return s.Environment["NATS_USER"]
}

// TestComposeServices: the page, the example interceptor, the exporter and
// Jaeger are there, each connected as the user its role needs, the
// interceptor answering the subjects and queue its user may and the
// registration names, the exporter sending to Jaeger by the standard
// OTEL_* variables, the page's token file a valid one.
func TestComposeServices(t *testing.T) {
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatal(err)
	}
	svc := func(name string) composeService {
		t.Helper()
		s, ok := compose.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		return s
	}
	for name, want := range map[string]string{"provision": "admin", "register": "admin", "loop-1": "loop", "loop-2": "loop",
		"observer": "auditor", "ui": "webui", "otel": "auditor", "interceptor": "plugin-pii"} {
		if got := svc(name).user(t, name); got != want {
			t.Errorf("service %s connects as %s, want %s", name, got, want)
		}
	}

	// The interceptor answers on hookbus.hook.<stage>.<plugin> in queue
	// <plugin>, as the registration says, and its user may do just that.
	ic, reg := svc("interceptor"), svc("register")
	plugin := ic.user(t, "interceptor")
	i := slices.Index(ic.Command, "reply")
	if i < 0 || i+1 >= len(ic.Command) {
		t.Fatalf("interceptor: %v is no nats reply", ic.Command)
	}
	if subject, want := ic.Command[i+1], "hookbus.hook."+reg.flag("--stage")+"."+reg.flag("--plugin"); subject != want || reg.flag("--plugin") != plugin {
		t.Errorf("interceptor answers %s, registration %s (plugin %s, user %s)", subject, want, reg.flag("--plugin"), plugin)
	}
	if ic.flag("--queue") != plugin {
		t.Errorf("interceptor queue %q, want %q (its user may subscribe only in its own group)", ic.flag("--queue"), plugin)
	}
	opts := checkConfig(t, "single.conf")
	var perms *server.Permissions
	for _, u := range opts.Users {
		if u.Username == plugin {
			perms = u.Permissions
		}
	}
	if perms == nil || !slices.Contains(perms.Subscribe.Allow, "hookbus.hook.*."+plugin+" "+plugin) || perms.Response == nil {
		t.Errorf("user %s may not answer in its queue: %+v", plugin, perms)
	}

	// The page: on all addresses, with a public URL and a token file that
	// parses; the port published.
	ui := svc("ui")
	if ui.flag("--listen") != "0.0.0.0:8080" || ui.flag("--public-url") == "" || !slices.Contains(ui.Ports, "8080:8080") {
		t.Errorf("ui: %v, ports %v", ui.Command, ui.Ports)
	}
	// Its token file: secret ui-tokens, $HOOKBUS_UI_TOKENS of .env, copied
	// in readable by the image's user only (a token file every user may
	// read is refused); the placeholder parses.
	var compose2 struct {
		Secrets map[string]struct {
			Environment string `yaml:"environment"`
		} `yaml:"secrets"`
	}
	if err := yaml.Unmarshal(raw, &compose2); err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, sec := range ui.Secrets {
		if sec.Target != ui.flag("--token-file") {
			continue
		}
		mounted = true
		if sec.UID != "65532" || sec.Mode&0o077 != 0 {
			t.Errorf("ui token file %s: uid %s, mode %04o; want the image's user (65532) only", sec.Target, sec.UID, sec.Mode)
		}
		env := compose2.Secrets[sec.Source].Environment
		dotenv, err := os.ReadFile(".env")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(env) + `="([^"]*)"$`).FindSubmatch(dotenv)
		if env == "" || m == nil {
			t.Fatalf("ui token file: secret %s from $%q, which .env does not set", sec.Source, env)
		}
		if _, err := httpauth.ParseTokens(strings.NewReader(string(m[1])), ".env"); err != nil {
			t.Errorf("ui token file ($%s): %v", env, err)
		}
	}
	if !mounted {
		t.Errorf("ui: --token-file %s is not a secret of the service", ui.flag("--token-file"))
	}

	// The exporter: OTLP/gRPC to the Jaeger service, by the variables.
	otel := svc("otel")
	endpoint, err := url.Parse(otel.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"])
	if err != nil || otel.Environment["OTEL_EXPORTER_OTLP_PROTOCOL"] != "grpc" || endpoint.Port() != "4317" {
		t.Errorf("otel environment %v", otel.Environment)
	} else if _, ok := compose.Services[endpoint.Hostname()]; !ok {
		t.Errorf("otel sends to %s, which is no service", endpoint.Hostname())
	}
	if !strings.Contains(strings.Join(svc(endpoint.Hostname()).Command, " "), "grpc.endpoint=0.0.0.0:4317") {
		t.Errorf("%s does not take OTLP/gRPC on 4317 from other containers", endpoint.Hostname())
	}
}

// TestDockerfileServesCompose: the image compose builds is the
// Dockerfile's default stage, which has no entrypoint (compose's commands
// name the binary, and a command does not replace an entrypoint) and holds
// every binary a command names.
func TestDockerfileServesCompose(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(raw), -1)
	last := stages[len(stages)-1]
	if !strings.HasPrefix(last, "base AS hookbus") || strings.Contains(last, "ENTRYPOINT") {
		t.Errorf("the Dockerfile's last stage is not the entrypoint-less hookbus stage on base:\n%s", last)
	}
	copied := regexp.MustCompile(`(?m)^COPY --from=build (.+) /usr/local/bin/$`).FindStringSubmatch(string(raw))
	if copied == nil {
		t.Fatal("the Dockerfile copies no binary to /usr/local/bin/")
	}
	compose, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`- /usr/local/bin/(\S+)`).FindAllStringSubmatch(string(compose), -1) {
		if !slices.Contains(strings.Fields(copied[1]), "/out/"+m[1]) {
			t.Errorf("compose runs /usr/local/bin/%s, which the image does not hold", m[1])
		}
	}
}
