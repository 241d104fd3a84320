// The Go column of the client matrix: net/http's default client (crypto/tls and crypto/x509 with their defaults)
// with the built-in CA as the only root. Usage: go-client CA.pem HOST PORT: loads https://HOST:PORT/ once, prints one
// line (the status, or Go's error) and exits 0 when it read an HTTP 200, 1 when it did not, 2 when it could not run.
// A DNS name is dialled at 127.0.0.1, as a lookup would answer; the URL, SNI and the name check keep the name.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: go-client CA.pem HOST PORT")
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
	host, port := os.Args[2], os.Args[3]
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
	response, err := client.Get(url)
	if err != nil {
		// "Get \"https://…\": x509: …": the URL is the driver's own input, the rest is Go's verdict.
		fmt.Println(oneLine(strings.TrimPrefix(err.Error(), fmt.Sprintf("Get %q: ", url))))
		os.Exit(1)
	}
	io.Copy(io.Discard, response.Body)
	response.Body.Close()
	fmt.Printf("HTTP %d, %s\n", response.StatusCode, tlsVersion(response.TLS))
	if response.StatusCode != 200 {
		os.Exit(1)
	}
}

func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
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
