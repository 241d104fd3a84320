// The Java column of the client matrix: JSSE with the default SSLContext protocol ("TLS"), the default trust manager
// algorithm (PKIX) fed a key store holding only the built-in CA, and HTTPS endpoint identification, as
// HttpsURLConnection does it. Usage: java MatrixClient CA.pem HOST PORT (compiled by scripts/matrix.py into
// .build-matrix/java; `java MatrixClient.java …` runs the source as well): loads https://HOST:PORT/ once, prints one
// line (the status, or JSSE's exception and its causes) and exits 0 when it read an HTTP 200, 1 when it did not. A DNS
// name is connected at 127.0.0.1; SNI and the name check keep the name.
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.List;
import javax.net.ssl.*;

public class MatrixClient {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: java MatrixClient CA.pem HOST PORT");
            System.exit(64);
        }
        KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
        roots.load(null, null);
        int index = 0;
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                roots.setCertificateEntry("ca" + index++, certificate);
            }
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(roots);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        boolean accepted = false;
        String detail;
        try {
            detail = fetch(context.getSocketFactory(), args[1], Integer.parseInt(args[2]));
            accepted = detail.startsWith("HTTP/1.1 200");
        } catch (Exception e) {
            detail = describe(e);
        }
        System.out.println(detail);
        System.out.flush();
        System.exit(accepted ? 0 : 1);
    }

    static boolean isAddress(String host) {
        return host.contains(":") || host.matches("[0-9.]+");
    }

    static String fetch(SSLSocketFactory factory, String host, int port) throws IOException {
        Socket raw = new Socket();
        raw.connect(new InetSocketAddress(isAddress(host) ? host : "127.0.0.1", port), 10_000);
        raw.setSoTimeout(15_000);
        try (SSLSocket socket = (SSLSocket) factory.createSocket(raw, host, port, true)) {
            SSLParameters parameters = socket.getSSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            if (!isAddress(host)) parameters.setServerNames(List.of(new SNIHostName(host)));
            socket.setSSLParameters(parameters);
            socket.startHandshake();
            OutputStream out = socket.getOutputStream();
            out.write(("GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String status = in.readLine();
            while (in.readLine() != null) { }
            return (status == null ? "no HTTP answer" : status) + ", " + socket.getSession().getProtocol();
        }
    }

    /** The exception and its causes, one line: JSSE wraps the reason (e.g. CertPathValidatorException) in layers. */
    static String describe(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (!text.toString().contains(String.valueOf(cause.getMessage()))) text.append(" <- ").append(cause);
        }
        return text.toString().replaceAll("\\s+", " ");
    }
}
