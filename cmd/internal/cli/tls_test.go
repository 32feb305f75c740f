package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// pki is a CA, and a server's and a client's certificates it signed, as
// PEM files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey, otherCert, otherKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	cert := func(tmpl *x509.Certificate, k *ecdsa.PrivateKey, parent *x509.Certificate, signer *ecdsa.PrivateKey) (*x509.Certificate, []byte) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent, signer = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c, der
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	caKey := key()
	ca, caDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "hookbus test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, caKey, nil, nil)
	var p pki
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	sk := key()
	_, sDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "nats"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, sk, ca, caKey)
	p.serverCert, p.serverKey = write("server.pem", "CERTIFICATE", sDER), write("server-key.pem", "EC PRIVATE KEY", keyDER(sk))
	ck := key()
	_, cDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "loop"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, ck, ca, caKey)
	p.clientCert, p.clientKey = write("client.pem", "CERTIFICATE", cDER), write("client-key.pem", "EC PRIVATE KEY", keyDER(ck))
	// A client certificate of another CA, which the server does not trust.
	otherCAKey := key()
	otherCA, _ := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, otherCAKey, nil, nil)
	ok := key()
	_, oDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "intruder"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, ok, otherCA, otherCAKey)
	p.otherCert, p.otherKey = write("other.pem", "CERTIFICATE", oDER), write("other-key.pem", "EC PRIVATE KEY", keyDER(ok))
	return p
}

// mtlsServer starts a real nats-server that requires TLS and verifies
// its clients' certificates (verify: true) and returns its URL.
func mtlsServer(t *testing.T, p pki) string {
	t.Helper()
	return startServer(t, func(o *server.Options) {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: p.serverCert, KeyFile: p.serverKey, CaFile: p.ca, Verify: true})
		if err != nil {
			t.Fatal(err)
		}
		o.TLSConfig, o.TLS, o.TLSVerify, o.TLSTimeout = tc, true, true, 5
	})
}

// A server with verify: true takes a client certificate given by flags,
// by $NATS_CERT and $NATS_KEY, or by a NATS context, and refuses a client
// without one or with one its CA did not sign.
func TestClientCertificates(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", "")
	p := newPKI(t)
	url := strings.Replace(mtlsServer(t, p), "nats://", "tls://", 1)

	if _, err := openWith(t, "--nats", url, "--tls-ca", p.ca, "--tls-cert", p.clientCert, "--tls-key", p.clientKey); err != nil {
		t.Fatalf("--tls-cert/--tls-key: %v", err)
	}
	if _, err := openWith(t, "--nats", url, "--tls-ca", p.ca); err == nil {
		t.Fatal("connected without a client certificate")
	}
	if _, err := openWith(t, "--nats", url, "--tls-ca", p.ca, "--tls-cert", p.otherCert, "--tls-key", p.otherKey); err == nil {
		t.Fatal("connected with a certificate of another CA")
	}
	if _, err := openWith(t, "--nats", url, "--tls-cert", p.clientCert); err == nil || !strings.Contains(err.Error(), "needs both --tls-cert and --tls-key") {
		t.Fatalf("--tls-cert alone: %v", err)
	}
	t.Setenv("NATS_CA", p.ca)
	t.Setenv("NATS_CERT", p.clientCert)
	t.Setenv("NATS_KEY", p.clientKey)
	if _, err := openWith(t, "--nats", url); err != nil {
		t.Fatalf("$NATS_CERT and $NATS_KEY: %v", err)
	}
	t.Setenv("NATS_CA", "")
	t.Setenv("NATS_CERT", "")
	t.Setenv("NATS_KEY", "")
	natsContext(t, "mtls", `{"url": "`+url+`", "ca": "`+p.ca+`", "cert": "file://`+p.clientCert+`", "key": "`+p.clientKey+`"}`)
	if _, err := openWith(t, "--context", "mtls"); err != nil {
		t.Fatalf("a context's cert and key: %v", err)
	}
}
