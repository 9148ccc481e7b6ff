package jobtls_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gochare/gochare/internal/jobtls"
)

func newJob(t *testing.T) *jobtls.Job {
	t.Helper()
	j, err := jobtls.New()
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Written files are 0600 and load back to the same credentials (the same
// job secret); a PE and the coordinator complete a mutual TLS handshake.
func TestWriteLoad(t *testing.T) {
	j := newJob(t)
	dir := filepath.Join(t.TempDir(), "secret")
	// A file left with a wider mode is replaced, not kept.
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, jobtls.KeyFile), []byte("old"), 0o644)
	if err := j.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{jobtls.CAFile, jobtls.CertFile, jobtls.KeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", f, st.Mode().Perm())
		}
	}
	pe, err := jobtls.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pe.Secret(), j.PE().Secret()) || len(pe.Secret()) < 16 {
		t.Error("the loaded PE derives another job secret than the launcher")
	}
	if bytes.Equal(pe.Secret(), newJob(t).PE().Secret()) {
		t.Error("two jobs derive the same secret")
	}
	if err := handshake(pe.CoordinatorClientConfig(), j.CoordinatorConfig()); err != nil {
		t.Errorf("PE to coordinator: %v", err)
	}
	if err := handshake(pe.PeerConfig(), j.PE().PeerConfig()); err != nil {
		t.Errorf("PE to PE: %v", err)
	}
	// A PE certificate does not pass for the coordinator.
	if err := handshake(pe.CoordinatorClientConfig(), pe.PeerConfig()); err == nil {
		t.Error("a PE's certificate passed for the coordinator's")
	}
	// Another job's PE is refused by the coordinator and by PEs.
	other := newJob(t).PE()
	if err := handshake(other.CoordinatorClientConfig(), j.CoordinatorConfig()); err == nil {
		t.Error("the coordinator accepted a PE of another job")
	}
	if err := handshake(other.PeerConfig(), pe.PeerConfig()); err == nil {
		t.Error("a PE accepted a PE of another job")
	}
}

// handshake runs a TLS handshake between client and server over a pipe
// and returns the first error of either side (a client verdict the
// server gives after the client's handshake shows on the client's read).
func handshake(client, server *tls.Config) error {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(b, server)
		err := s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		done <- err
		b.Close()
	}()
	c := tls.Client(a, client)
	err := c.Handshake()
	if err == nil {
		var one [1]byte
		_, err = c.Read(one[:])
	}
	if serr := <-done; serr != nil {
		return serr
	}
	return err
}

// Missing, loose or mismatched files give an error that names the file.
func TestLoadErrors(t *testing.T) {
	j, other := newJob(t), newJob(t)
	good, foreign := t.TempDir(), t.TempDir()
	if err := j.Write(good); err != nil {
		t.Fatal(err)
	}
	if err := other.Write(foreign); err != nil {
		t.Fatal(err)
	}
	read := func(dir, f string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"no directory", func(dir string) { os.RemoveAll(dir) }, "ca.crt is missing"},
		{"no key", func(dir string) { os.Remove(filepath.Join(dir, jobtls.KeyFile)) }, "pe.key is missing"},
		{"key readable by others", func(dir string) { os.Chmod(filepath.Join(dir, jobtls.KeyFile), 0o644) }, "pe.key may be read by others (mode 0644)"},
		{"not PEM", func(dir string) { os.WriteFile(filepath.Join(dir, jobtls.CAFile), []byte("hello"), 0o600) }, "ca.crt holds no PEM certificate"},
		{"the PE certificate as CA", func(dir string) {
			os.WriteFile(filepath.Join(dir, jobtls.CAFile), read(dir, jobtls.CertFile), 0o600)
		}, "ca.crt is not a CA certificate"},
		{"key of another job", func(dir string) {
			os.WriteFile(filepath.Join(dir, jobtls.KeyFile), read(foreign, jobtls.KeyFile), 0o600)
		}, "private key does not match public key"},
		{"CA of another job", func(dir string) {
			os.WriteFile(filepath.Join(dir, jobtls.CAFile), read(foreign, jobtls.CAFile), 0o600)
		}, "pe.crt is not a PE certificate of the CA in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if err := j.Write(dir); err != nil {
				t.Fatal(err)
			}
			c.setup(dir)
			_, err := jobtls.Load(dir)
			if !errors.Is(err, jobtls.ErrCredentials) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want ErrCredentials with %q", err, c.want)
			}
		})
	}
}
