// The Java column of the client matrix: JSSE with the default SSLContext protocol ("TLS"), the default trust manager
// algorithm (PKIX) fed a key store holding only the built-in CA, and HTTPS endpoint identification, as
// HttpsURLConnection does it. Usage: java MatrixClient.java CA.pem TARGETS (one ID<TAB>HOST<TAB>PORT line each); one
// JSON line per target on standard output. DNS names are connected at 127.0.0.1; SNI and the name check keep the name.
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
        if (args.length != 2) {
            System.err.println("usage: java MatrixClient.java CA.pem TARGETS");
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
        SSLSocketFactory factory = context.getSocketFactory();
        for (String line : Files.readAllLines(Path.of(args[1]))) {
            String[] fields = line.split("\t");
            if (fields.length != 3) continue;
            String id = fields[0], host = fields[1];
            int port = Integer.parseInt(fields[2]);
            boolean accepted = false;
            String detail;
            try {
                detail = fetch(factory, host, port);
                accepted = detail.startsWith("HTTP/1.1 200");
            } catch (Exception e) {
                detail = describe(e);
            }
            System.out.println("{\"id\":" + quote(id) + ",\"accepted\":" + accepted + ",\"detail\":" + quote(detail) + "}");
            System.out.flush();
        }
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

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c)); else out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
