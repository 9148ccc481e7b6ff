package jobtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// Names in the job's certificates: a PE checks that the peer it dials
// presents PEName, and that its coordinator presents CoordinatorName.
const (
	PEName          = "gochare-pe"
	CoordinatorName = "gochare-coordinator"
)

// Files in a job's secret directory.
const (
	CAFile   = "ca.crt"
	CertFile = "pe.crt"
	KeyFile  = "pe.key"
)

// validity is how long the job's certificates are valid; notBeforeSlack
// allows for clocks of other hosts a little behind this one.
const (
	validity       = 365 * 24 * time.Hour
	notBeforeSlack = time.Hour
)

// ErrCredentials reports missing or unusable TLS files.
var ErrCredentials = errors.New("jobtls: bad TLS credentials")

// Job is what the launcher holds: the PEs' files (PEM) and the
// coordinator's certificate.
type Job struct {
	caPEM, certPEM, keyPEM []byte
	pe                     *PE
	coordinator            tls.Certificate
}

// PE is the credentials a PE loaded: its certificate, the CA it trusts,
// and the job secret derived from its key.
type PE struct {
	cert   tls.Certificate
	pool   *x509.CertPool
	secret []byte
}

// New makes a job's CA and certificates.
func New() (*Job, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("jobtls: CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "gochare job CA"},
		NotBefore:             now.Add(-notBeforeSlack),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("jobtls: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("jobtls: CA certificate: %w", err)
	}
	issue := func(name string, usage []x509.ExtKeyUsage) (certDER []byte, key *ecdsa.PrivateKey, err error) {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("jobtls: %s key: %w", name, err)
		}
		t := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: name},
			DNSNames:     []string{name},
			NotBefore:    now.Add(-notBeforeSlack),
			NotAfter:     now.Add(validity),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
		}
		certDER, err = x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("jobtls: %s certificate: %w", name, err)
		}
		return certDER, key, nil
	}
	peDER, peKey, err := issue(PEName, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	coDER, coKey, err := issue(CoordinatorName, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	if err != nil {
		return nil, err
	}
	peKeyDER, err := x509.MarshalPKCS8PrivateKey(peKey)
	if err != nil {
		return nil, fmt.Errorf("jobtls: PE key: %w", err)
	}
	j := &Job{
		caPEM:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: peDER}),
		keyPEM:      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: peKeyDER}),
		coordinator: tls.Certificate{Certificate: [][]byte{coDER}, PrivateKey: coKey},
	}
	j.pe, err = parse(j.caPEM, j.certPEM, j.keyPEM, "")
	if err != nil {
		return nil, err
	}
	return j, nil
}

// serial is a random certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("jobtls: no randomness: %v", err))
	}
	return n
}

// PE returns the credentials a PE of the job loads from the files.
func (j *Job) PE() *PE { return j.pe }

// Write puts the PEs' files in dir (made, mode 0700, if missing), each
// mode 0600, replacing any there.
func (j *Job) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("jobtls: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{CAFile, j.caPEM}, {CertFile, j.certPEM}, {KeyFile, j.keyPEM}} {
		// A new file (CreateTemp makes it 0600) renamed over the old:
		// an existing file's wider mode is not kept.
		tmp, err := os.CreateTemp(dir, "."+f.name+"-*")
		if err != nil {
			return fmt.Errorf("jobtls: %w", err)
		}
		_, err = tmp.Write(f.data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o600)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(dir, f.name))
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("jobtls: writing %s: %w", f.name, err)
		}
	}
	return nil
}

// CoordinatorConfig is the TLS configuration of the coordinator's
// listener: it presents CoordinatorName and requires a PE certificate of
// the job from every client.
func (j *Job) CoordinatorConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{j.coordinator},
		ClientCAs:    j.pe.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

// Load reads a PE's credentials from dir (CAFile, CertFile, KeyFile).
// Missing files, files others may read, and files that do not belong
// together give an error wrapping ErrCredentials that names the file.
func Load(dir string) (*PE, error) {
	read := func(name string) ([]byte, error) {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is missing (--tls reads %s, %s and %s from --secret-dir, written by 'gochare run --tls')", ErrCredentials, path, CAFile, CertFile, KeyFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
		}
		return b, nil
	}
	caPEM, err := read(CAFile)
	if err != nil {
		return nil, err
	}
	certPEM, err := read(CertFile)
	if err != nil {
		return nil, err
	}
	keyPath := filepath.Join(dir, KeyFile)
	keyPEM, err := read(KeyFile)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(keyPath); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s may be read by others (mode %04o): it must be 0600", ErrCredentials, keyPath, st.Mode().Perm())
	}
	return parse(caPEM, certPEM, keyPEM, dir)
}

// parse checks that the files belong together: the key is the
// certificate's, the certificate is PEName's, signed by the CA, and valid
// now. dir names them in errors ("" for New's own).
func parse(caPEM, certPEM, keyPEM []byte, dir string) (*PE, error) {
	name := func(f string) string {
		if dir == "" {
			return f
		}
		return filepath.Join(dir, f)
	}
	pool := x509.NewCertPool()
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrCredentials, name(CAFile))
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCredentials, name(CAFile), err)
	}
	if !ca.IsCA {
		return nil, fmt.Errorf("%w: %s is not a CA certificate", ErrCredentials, name(CAFile))
	}
	pool.AddCert(ca)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s and %s: %w", ErrCredentials, name(CertFile), name(KeyFile), err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCredentials, name(CertFile), err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: PEName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("%w: %s is not a PE certificate of the CA in %s: %w", ErrCredentials, name(CertFile), name(CAFile), err)
	}
	keyBlock, _ := pem.Decode(keyPEM)
	sum := sha256.New()
	sum.Write([]byte("gochare job secret\x00"))
	sum.Write(keyBlock.Bytes) // X509KeyPair parsed it: not nil
	return &PE{cert: cert, pool: pool, secret: sum.Sum(nil)}, nil
}

// Secret is the job secret derived from the PE key: every holder of the
// key, and the launcher that made it, computes the same.
func (p *PE) Secret() []byte { return p.secret }

// PeerConfig is the TLS configuration of PE-to-PE connections, for both
// sides: each presents the PE certificate and requires the other's, both
// signed by the job's CA (a dialer checks the name PEName, whatever the
// address it dialed).
func (p *PE) PeerConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.cert},
		RootCAs:      p.pool,
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   PEName,
		MinVersion:   tls.VersionTLS13,
	}
}

// CoordinatorClientConfig is the TLS configuration of a PE's connection
// to its coordinator: it presents the PE certificate and requires the
// coordinator's.
func (p *PE) CoordinatorClientConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.cert},
		RootCAs:      p.pool,
		ServerName:   CoordinatorName,
		MinVersion:   tls.VersionTLS13,
	}
}
