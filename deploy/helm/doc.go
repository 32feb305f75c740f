// Package helmchart holds no code: it is the home of the tests of the Helm
// chart in deploy/helm/hookbus, which need no cluster.
//
// The chart is rendered by Helm's own Go engine (helm.sh/helm/v3: the
// loader, the dependency conditions, the values' schema, the template
// engine), with the official NATS chart as its "nats" dependency
// (testdata/nats, the version Chart.yaml names), exactly as `helm
// template` renders it. Then:
//
//   - every manifest decodes strictly into its Kubernetes API type
//     (k8s.io/api, and the Prometheus Operator's ServiceMonitor): an
//     unknown or misplaced field fails;
//   - what makes the release work is checked: probes on /healthz and
//     /readyz at a declared port, a termination grace period longer than
//     --drain-timeout, PodDisruptionBudgets and Services that select
//     their pods, every Secret, key and ConfigMap a pod or monitor refers
//     to rendered, every $(VAR) of a command line defined, names and
//     labels;
//   - the NATS configuration the two charts make together (nats.conf and
//     hookbus' accounts) is loaded by a real nats-server, which must
//     accept it, and gives each user exactly the permissions
//     deploy/nats/accounts.conf gives it;
//   - `helm lint` (its own rules) passes, and bad values fail, by the
//     schema (values.schema.json) or by the templates, naming the value.
//
// The Helm and Kubernetes modules are test dependencies only: the loop
// and observer binaries link none of them (TestBinariesLinkNoHelm).
package helmchart
