// The Go column of the client matrix: net/http's default client (crypto/tls and crypto/x509 with their defaults)
// with the built-in CA as the only root. Usage: go run go-client.go CA.pem TARGETS (one ID<TAB>HOST<TAB>PORT line
// each); one JSON line per target on standard output. Every DNS name is dialled at 127.0.0.1, as a lookup would
// answer; the URL, SNI and the name check keep the name.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

type result struct {
	ID       string `json:"id"`
	Accepted bool   `json:"accepted"`
	Detail   string `json:"detail"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-client CA.pem TARGETS")
		os.Exit(64)
	}
	caPEM, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		fmt.Fprintln(os.Stderr, "no certificate in", os.Args[1])
		os.Exit(2)
	}
	targets, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	scanner := bufio.NewScanner(targets)
	for scanner.Scan() {
		fields := strings.Split(scanner.Text(), "\t")
		if len(fields) != 3 {
			continue
		}
		id, host, port := fields[0], fields[1], fields[2]
		address := "127.0.0.1"
		if net.ParseIP(host) != nil {
			address = host
		}
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		transport := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots},
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", net.JoinHostPort(address, port))
			},
		}
		client := &http.Client{Transport: transport, Timeout: 15 * time.Second}
		url := "https://" + net.JoinHostPort(host, port) + "/"
		r := result{ID: id}
		response, err := client.Get(url)
		if err != nil {
			// "Get \"https://…\": x509: …": the URL is the driver's own input, the rest is Go's verdict.
			r.Detail = strings.TrimPrefix(err.Error(), fmt.Sprintf("Get %q: ", url))
		} else {
			io.Copy(io.Discard, response.Body)
			response.Body.Close()
			r.Accepted = response.StatusCode == 200
			r.Detail = fmt.Sprintf("HTTP %d, %s", response.StatusCode, tlsVersion(response.TLS))
		}
		out.Encode(r)
		transport.CloseIdleConnections()
	}
}

func tlsVersion(state *tls.ConnectionState) string {
	if state == nil {
		return "no TLS"
	}
	switch state.Version {
	case tls.VersionTLS10:
		return "TLS 1.0"
	case tls.VersionTLS11:
		return "TLS 1.1"
	case tls.VersionTLS12:
		return "TLS 1.2"
	case tls.VersionTLS13:
		return "TLS 1.3"
	}
	return fmt.Sprintf("version %#x", state.Version)
}
